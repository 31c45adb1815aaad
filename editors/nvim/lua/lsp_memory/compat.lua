-- Version shims: the few places where Neovim 0.7 (Debian's, tested in CI) and 0.8 … 0.11+
-- spell the same thing differently. Everything else in the plugin uses APIs that exist
-- unchanged from 0.7 on.
local M = {}

M.uv = vim.uv or vim.loop -- vim.uv from 0.10; vim.loop before (still an alias later)

-- 0.11 turned the client's functions into methods (`client:request(…)`) and deprecates the
-- `client.request(…)` form (removed in 0.13); before 0.11 only the dot form exists.
local methods = vim.fn.has('nvim-0.11') == 1

--- Calls `client.<name>(…)` the way this Neovim expects.
function M.call(client, name, ...)
  if methods then
    return client[name](client, ...)
  end
  return client[name](...)
end

--- Whether vim.lsp.start exists (0.8+): it starts a client or reuses the one with the same
--- name and root_dir, and attaches the buffer. On 0.7 the plugin does that itself.
M.has_start = vim.lsp.start ~= nil

--- Starts (or, 0.8+, reuses) a client for `config` and attaches `bufnr`; the client id or nil.
function M.start(config, bufnr)
  if M.has_start then
    return vim.lsp.start(config, { bufnr = bufnr })
  end
  local id = vim.lsp.start_client(config) -- 0.7: nil when the command could not be spawned
  if id then
    vim.lsp.buf_attach_client(bufnr, id) -- didOpen goes out once the server is initialized
  end
  return id
end

--- Attaches `bufnr` to a running client (0.7 path; 0.8+ goes through M.start again).
function M.attach(bufnr, id)
  return vim.lsp.buf_attach_client(bufnr, id)
end

--- The buffers attached to a client: `client.attached_buffers` exists from 0.7 on.
function M.attached_buffers(client)
  local found = {}
  for bufnr, attached in pairs(client.attached_buffers or {}) do
    if attached then
      table.insert(found, bufnr)
    end
  end
  table.sort(found)
  return found
end

--- Neovim's LSP log file, where a server's stderr goes. (vim.lsp.get_log_path() is
--- deprecated from 0.12; the log module has had get_filename() since 0.7.)
function M.log_path()
  return require('vim.lsp.log').get_filename()
end

return M
