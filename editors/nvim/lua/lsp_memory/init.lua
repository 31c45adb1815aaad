-- lsp-memory for Neovim 0.7+: starts `lsp-memory serve` for Markdown notes in a vault (one
-- client per vault root, shared by its buffers) and adds :LspMemoryBuildContext,
-- :LspMemorySearch, :LspMemoryReindex, :LspMemoryRemember and :LspMemoryRestart.
--
--   require("lsp_memory").setup({
--     cmd = { "lsp-memory", "serve" },                -- as in nvim-lspconfig
--     filetypes = { "markdown" },
--     settings = { lspMemory = { user = "priya" } },  -- answered to workspace/configuration
--   })
--
-- See :help lsp-memory.
local actions = require('lsp_memory.actions')
local clients = require('lsp_memory.client')

local M = {}

local defaults = {
  cmd = { 'lsp-memory', 'serve' },
  filetypes = { 'markdown' },
  settings = {},
  -- init_options: sent as initializationOptions when given (the same keys as settings)
  root_markers = { 'lsp-memory.toml', '.git' },
  root_dir = nil, -- function(path, bufnr) -> folder: overrides root_markers
  register = nil, -- where :LspMemoryBuildContext yanks: "+" with a clipboard, else '"'
  split = 'split', -- the Ex command that opens the context block's window
  search = { kind = 'all', k = 20 },
  timeout_ms = 10000, -- how long a command waits for a starting server
}

-- The plugin's own options; every other key (capabilities, handlers, on_attach, flags,
-- cmd_env, …) goes to the client config as it would with nvim-lspconfig.
local own = {
  filetypes = true,
  root_markers = true,
  root_dir = true,
  register = true,
  split = true,
  search = true,
  timeout_ms = true,
}

local function is_list_of_strings(value)
  if type(value) ~= 'table' or #value == 0 then
    return false
  end
  for key, item in pairs(value) do
    if type(key) ~= 'number' or type(item) ~= 'string' then
      return false
    end
  end
  return true
end

-- Option -> check and what a valid value is, for the message about a bad one.
local checks = {
  cmd = {
    function(v) return is_list_of_strings(v) or type(v) == 'function' end,
    'a list of strings such as { "lsp-memory", "serve" }',
  },
  filetypes = { is_list_of_strings, 'a list of filetypes such as { "markdown" }' },
  settings = {
    function(v) return type(v) == 'table' end,
    'a table such as { lspMemory = { user = "priya" } }',
  },
  root_markers = { is_list_of_strings, 'a list of file names such as { "lsp-memory.toml" }' },
  root_dir = { function(v) return type(v) == 'function' end, 'a function(path, bufnr)' },
  register = {
    function(v) return type(v) == 'string' and #v == 1 end,
    'one register name such as "+"',
  },
  split = { function(v) return type(v) == 'string' end, 'an Ex command such as "vsplit"' },
  search = { function(v) return type(v) == 'table' end, 'a table { kind = "all", k = 20 }' },
  timeout_ms = { function(v) return type(v) == 'number' and v > 0 end, 'milliseconds' },
}

--- The options with the defaults filled in; a bad option is reported and its default used.
local function resolve(user)
  local resolved = vim.deepcopy(defaults)
  for key, value in pairs(user or {}) do
    local check = checks[key]
    if check and not check[1](value) then
      vim.notify(
        ('lsp-memory: setup option `%s` must be %s, not %s; using the default'):format(
          key,
          check[2],
          vim.inspect(value)
        ),
        vim.log.levels.ERROR
      )
    else
      resolved[key] = value
    end
  end
  resolved.search = vim.tbl_extend('force', defaults.search, resolved.search)
  resolved.client = {}
  for key, value in pairs(resolved) do
    if not own[key] and key ~= 'client' then
      resolved.client[key] = value
    end
  end
  return resolved
end

local function create_commands()
  local command = vim.api.nvim_create_user_command
  command('LspMemoryBuildContext', function(args)
    local budget = nil
    if args.args ~= '' then
      budget = tonumber(args.args)
      if budget == nil or budget < 1 or budget % 1 ~= 0 then
        clients.notify('the budget is a whole number of tokens, such as 2000',
          vim.log.levels.ERROR)
        return
      end
    end
    actions.build_context({ budget = budget })
  end, { nargs = '?', desc = "lsp-memory: this note's context block in a scratch buffer" })
  command('LspMemorySearch', function(args)
    actions.search(args.args)
  end, { nargs = '*', desc = 'lsp-memory: search memory, insert the chosen reference' })
  command('LspMemoryReindex', function()
    actions.reindex()
  end, { nargs = 0, desc = 'lsp-memory: sync the indexes now' })
  command('LspMemoryRemember', function(args)
    actions.remember(args.line1, args.line2, args.bang)
  end, {
    range = true,
    bang = true,
    desc = 'lsp-memory: remember the selection as a claim (! replaces it by its reference)',
  })
  command('LspMemoryUnlinkedMentions', function()
    actions.unlinked_mentions()
  end, { nargs = 0, desc = 'lsp-memory: the notes that mention this one unlinked (quickfix)' })
  command('LspMemoryRestart', function()
    M.restart()
  end, { nargs = 0, desc = 'lsp-memory: restart the language server, re-attach the notes' })
end

--- Configures the plugin: the FileType autocmd that starts and attaches the server, and the
--- user commands. Calling it again replaces the options for clients started afterwards
--- (:LspMemoryRestart restarts the running ones with them).
function M.setup(user)
  M.options = resolve(user)
  clients.configure(M.options)
  actions.configure(M.options)
  local group = vim.api.nvim_create_augroup('lsp_memory', { clear = true })
  vim.api.nvim_create_autocmd('FileType', {
    group = group,
    pattern = M.options.filetypes,
    callback = function(args)
      clients.attach(args.buf)
    end,
    desc = 'lsp-memory: attach notes to the language server of their vault',
  })
  create_commands()
  -- A reference-count lens runs this client-side: its locations go to the quickfix list.
  vim.lsp.commands['lspMemory.showReferences'] = actions.show_references
  -- Notes opened before setup() ran (a lazily loaded plugin) are attached now.
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    clients.attach(bufnr)
  end
end

--- The lsp-memory client of a buffer (0: the current one), or nil and why not.
function M.client(bufnr)
  return clients.get(bufnr or 0)
end

--- One line for the user: the buffer's server and root, or why it has none.
function M.status(bufnr)
  local client, why = clients.get(bufnr or 0)
  if client == nil then
    return 'lsp-memory: ' .. why
  end
  return ('lsp-memory: client %d, root %s%s'):format(
    client.id,
    vim.fn.fnamemodify(client.config.root_dir, ':~'),
    client.initialized and '' or ' (starting)'
  )
end

M.build_context = actions.build_context
M.search = actions.search
M.reindex = actions.reindex
M.remember = actions.remember
M.unlinked_mentions = actions.unlinked_mentions

--- Stops every lsp-memory client and attaches the loaded notes to new ones.
function M.restart()
  if M.options == nil then
    error('lsp-memory: call require("lsp_memory").setup() first')
  end
  local attached = clients.restart(M.options.timeout_ms)
  clients.notify(('restarted; %d buffer(s) attached'):format(attached))
end

return M
