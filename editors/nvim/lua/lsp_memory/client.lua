-- The language server's clients: one per vault root, shared by the Markdown buffers under it;
-- started when such a buffer gets its filetype, restarted only when the user asks.
--
-- Bad input never loops: a command that is not executable is reported once and not retried;
-- a server that exits on its own is reported once, with how to restart it, and its root is
-- left alone; both until :LspMemoryRestart or the next setup().
local compat = require('lsp_memory.compat')

local M = {}

M.NAME = 'lsp-memory'
local uv = compat.uv

local options -- the resolved setup() options (init.lua)
local roots = {} -- root folder -> { id = client id } | { crashed = message }
local roots_of = {} -- client id -> root folder
local stopping = {} -- client id -> true while the plugin itself stops it
local missing = {} -- command -> true once its absence was reported

local function notify(message, level)
  vim.notify('lsp-memory: ' .. message, level or vim.log.levels.INFO)
end
M.notify = notify

--- New options (setup()): missing commands and stopped servers get another try; running
--- servers keep theirs until :LspMemoryRestart.
function M.configure(resolved)
  options = resolved
  missing = {}
  for root, state in pairs(roots) do
    if state.crashed then
      roots[root] = nil
    end
  end
end

local function is_dir(path)
  local stat = uv.fs_stat(path)
  return stat ~= nil and stat.type == 'directory'
end

local function exists(path)
  return uv.fs_stat(path) ~= nil
end

local function parent(dir)
  return vim.fn.fnamemodify(dir, ':h')
end

--- The vault root of a file: the nearest folder upward holding one of `markers`, else the
--- file's own folder. (vim.fs.find would do on 0.8+; this walk works on 0.7 too.)
function M.find_root(path, markers)
  local start = vim.fn.fnamemodify(path, ':p:h')
  local dir = start
  while true do
    for _, marker in ipairs(markers) do
      if exists(dir .. '/' .. marker) then
        return dir
      end
    end
    local up = parent(dir)
    if up == dir then
      return start
    end
    dir = up
  end
end

--- The root a buffer belongs to, or nil when the plugin should leave it alone: not one of the
--- configured filetypes, not a file on disk (help, scratch and terminal buffers, URLs such as
--- fugitive://), or a custom root_dir function said no.
function M.root_of(bufnr)
  if not vim.api.nvim_buf_is_loaded(bufnr) or vim.bo[bufnr].buftype ~= '' then
    return nil
  end
  if not vim.tbl_contains(options.filetypes, vim.bo[bufnr].filetype) then
    return nil
  end
  local name = vim.api.nvim_buf_get_name(bufnr)
  if name == '' or name:match('^%a[%w+.-]*://') then
    return nil
  end
  local root
  if options.root_dir then
    root = options.root_dir(name, bufnr)
  else
    root = M.find_root(name, options.root_markers)
  end
  if type(root) ~= 'string' or root == '' or not is_dir(root) then
    return nil
  end
  root = vim.fn.fnamemodify(root, ':p'):gsub('(.)/$', '%1') -- one spelling per folder
  return root
end

local function command_name(cmd)
  return type(cmd) == 'table' and cmd[1] or nil
end

--- Reports once that the command cannot run; false when it cannot.
local function executable(cmd)
  local program = command_name(cmd)
  if program == nil then
    return true -- 0.10+ also takes a function (e.g. vim.lsp.rpc.connect): nothing to check
  end
  if vim.fn.executable(program) == 1 then
    return true
  end
  if not missing[program] then
    missing[program] = true
    notify(
      ('cannot start the language server: `%s` is not an executable program. Install '
        .. 'lsp-memory (in a clone, `make demo` gives `.venv/bin/lsp-memory`), set `cmd` in '
        .. 'require("lsp_memory").setup() to it, then run :LspMemoryRestart. '
        .. 'See :help lsp-memory-troubleshooting.'):format(program),
      vim.log.levels.ERROR
    )
  end
  return false
end

local function on_exit(code, signal, id)
  local root = roots_of[id]
  roots_of[id] = nil
  local expected = stopping[id]
  stopping[id] = nil
  if root == nil or roots[root] == nil or roots[root].id ~= id then
    return
  end
  -- Neovim stops its clients with SIGTERM (15) when it exits; code 0 is a clean shutdown.
  if expected or (code == 0 and (signal == 0 or signal == 15)) then
    roots[root] = nil -- the next Markdown buffer under this root starts a fresh one
    return
  end
  local why = signal ~= 0 and ('signal %d'):format(signal) or ('exit code %d'):format(code)
  roots[root] = { crashed = why }
  -- on_exit runs in a libuv callback, where the UI cannot be touched.
  vim.schedule(function()
    notify(
      ('the language server for %s stopped (%s). Its output is in %s. Run :LspMemoryRestart '
        .. 'to start it again; your open notes are sent to it as they are.'):format(
        vim.fn.fnamemodify(root, ':~'),
        why,
        vim.fn.fnamemodify(compat.log_path(), ':~')
      ),
      vim.log.levels.ERROR
    )
  end)
end

local function client_config(root)
  -- A shallow copy: vim.deepcopy cannot copy userdata such as vim.NIL on 0.7.
  local config = vim.tbl_extend('force', {}, options.client)
  config.name = M.NAME
  config.root_dir = root -- sent as rootUri and as the only workspace folder: the vault
  -- 0.7 answers workspace/configuration from `settings` but does not declare it in its
  -- capabilities, so the server would never ask for them (0.8+ declares it): declare it.
  local capabilities = vim.tbl_deep_extend(
    'force',
    vim.lsp.protocol.make_client_capabilities(),
    config.capabilities or {}
  )
  capabilities.workspace = capabilities.workspace or {}
  if capabilities.workspace.configuration == nil then
    capabilities.workspace.configuration = true
  end
  config.capabilities = capabilities
  local user_on_exit = config.on_exit
  config.on_exit = function(code, signal, id)
    on_exit(code, signal, id)
    if user_on_exit then
      user_on_exit(code, signal, id)
    end
  end
  return config
end

--- The running client of a root, if any.
local function running(root)
  local state = roots[root]
  local client = state and state.id and vim.lsp.get_client_by_id(state.id)
  if client and not compat.call(client, 'is_stopped') then
    return client
  end
  return nil
end

--- Attaches a buffer to its root's client, starting the client when the root has none.
--- Quiet for buffers the plugin does not handle and for roots whose server stopped.
function M.attach(bufnr)
  bufnr = bufnr == 0 and vim.api.nvim_get_current_buf() or bufnr
  local root = M.root_of(bufnr)
  if root == nil then
    return nil
  end
  if roots[root] and roots[root].crashed then
    return nil -- reported once already; :LspMemoryRestart clears it
  end
  local client = running(root)
  if client and not compat.has_start then
    compat.attach(bufnr, client.id)
    return client.id
  end
  if client == nil and not executable(options.client.cmd) then
    return nil
  end
  local id = compat.start(client_config(root), bufnr)
  if id == nil then
    -- Spawning failed although the program looked executable (Neovim said why).
    missing[command_name(options.client.cmd) or ''] = true
    return nil
  end
  roots[root] = { id = id }
  roots_of[id] = root
  return id
end

--- The running lsp-memory client of a buffer, or nil and why not (a sentence for the user).
function M.get(bufnr)
  bufnr = bufnr == 0 and vim.api.nvim_get_current_buf() or bufnr
  local root = M.root_of(bufnr)
  if root == nil then
    return nil, 'this buffer is not a note lsp-memory handles (filetypes: '
      .. table.concat(options.filetypes, ', ') .. ')'
  end
  local state = roots[root]
  if state and state.crashed then
    return nil, ('the language server stopped (%s); run :LspMemoryRestart'):format(state.crashed)
  end
  local client = running(root)
  if client == nil then
    return nil, 'the language server is not running; run :LspMemoryRestart'
  end
  if not vim.lsp.buf_is_attached(bufnr, client.id) then
    M.attach(bufnr)
  end
  return client
end

--- Every running lsp-memory client the plugin started.
function M.clients()
  local found = {}
  for root in pairs(roots) do
    local client = running(root)
    if client then
      table.insert(found, client)
    end
  end
  return found
end

--- Stops every lsp-memory client (waiting up to `timeout_ms` for them to exit, then killing
--- them), forgets crashes and missing commands, and attaches every loaded buffer again: new
--- clients, each sent didOpen with the buffer's current text, saved or not.
function M.restart(timeout_ms)
  timeout_ms = timeout_ms or 5000
  local ids = {}
  for root, state in pairs(roots) do
    if state.id then
      local client = vim.lsp.get_client_by_id(state.id)
      if client then
        stopping[state.id] = true
        compat.call(client, 'stop')
        table.insert(ids, state.id)
      end
    end
    roots[root] = nil
  end
  local function all_gone()
    for _, id in ipairs(ids) do
      if vim.lsp.get_client_by_id(id) ~= nil then
        return false
      end
    end
    return true
  end
  if not vim.wait(timeout_ms, all_gone, 20) then
    for _, id in ipairs(ids) do
      local client = vim.lsp.get_client_by_id(id)
      if client then
        compat.call(client, 'stop', true) -- force: SIGTERM
      end
    end
    vim.wait(2000, all_gone, 20)
  end
  missing = {}
  local attached = 0
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    if M.attach(bufnr) then
      attached = attached + 1
    end
  end
  return attached
end

return M
