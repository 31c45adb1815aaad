-- The Neovim plugin (editors/nvim) used as a user would, run by tests/nvim/test_plugin.py in
-- `nvim --headless -u NONE -i NONE --cmd "set rtp+=editors/nvim"`: setup(), `filetype on`,
-- :edit a note in a vault, then the plugin's commands against the real server, a server that
-- crashes, one that is missing, and the help file. Prints one `PASS name` or `FAIL name detail`
-- line per check (and `# …` notes), then quits with 0 (all passed) or 1.
--
-- Environment: LSP_MEMORY_NVIM_PYTHON (the interpreter), LSP_MEMORY_NVIM_DOC (the note, in a
-- subfolder of the vault), LSP_MEMORY_NVIM_VAULT (holds lsp-memory.toml: the root),
-- LSP_MEMORY_NVIM_OTHER (another root, marked by .git, with a.md and b.md),
-- LSP_MEMORY_NVIM_HELP (an empty folder for :helptags), and the server's LSP_MEMORY_STORE /
-- LSP_MEMORY_USER.
--
-- CI runs Debian's Neovim 0.7; the script also runs on 0.10 (what it inspects is spelled the
-- same there), so the plugin's 0.8+ path can be checked by hand with a newer nvim on PATH.

local TIMEOUT_MS = 15000
local STATEMENT_1 = 'The Leaf service uses PostgreSQL 16' -- claim #1, @leaf_active_a001
local BUDGET = 1200 -- from setup({ settings }), so the block's size shows the settings arrived
local ERROR, WARN = vim.log.levels.ERROR, vim.log.levels.WARN

local function out(line)
  io.stdout:write(line .. '\n')
  io.stdout:flush()
end

local failures = 0
local function check(name, ok, detail)
  if ok then
    out('PASS ' .. name)
  else
    failures = failures + 1
    out('FAIL ' .. name .. ' ' .. vim.inspect(detail))
  end
end

local function env(name)
  return assert(os.getenv(name), name .. ' is not set')
end

local function contains(text, needle)
  return type(text) == 'string' and text:find(needle, 1, true) ~= nil
end

local function wait_for(condition, timeout)
  return vim.wait(timeout or TIMEOUT_MS, condition, 20)
end

-- Every vim.notify call, as a user would have seen it.
local notes = {}
vim.notify = function(message, level)
  table.insert(notes, { message = message, level = level or vim.log.levels.INFO })
  out('# notify ' .. tostring(level) .. ' ' .. message:gsub('\n', ' | '))
end

--- The notifications since `from` (an index into `notes`) at `level` containing `needle`.
local function notes_since(from, level, needle)
  local found = {}
  for i = from + 1, #notes do
    local note = notes[i]
    local at_level = level == nil or note.level == level
    if at_level and (needle == nil or contains(note.message, needle)) then
      table.insert(found, note.message)
    end
  end
  return found
end

local function buffer_text(bufnr)
  return table.concat(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false), '\n')
end

local function line_of(bufnr, needle)
  for row, text in ipairs(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)) do
    if text:find(needle, 1, true) then return row, text end
  end
  error('not in the buffer: ' .. needle)
end

local function realpath(path)
  return path and vim.loop.fs_realpath(path)
end

local get_clients = vim.lsp.get_clients or vim.lsp.get_active_clients -- 0.10 renamed it

-- $/progress as every version receives it (0.7 keeps it in client.messages, 0.10 elsewhere).
local progress = {} -- client id -> token -> the last value
local on_progress = vim.lsp.handlers['$/progress']
vim.lsp.handlers['$/progress'] = function(err, result, ctx, config)
  progress[ctx.client_id] = progress[ctx.client_id] or {}
  local tokens = progress[ctx.client_id]
  local value = result and result.value or {}
  tokens[result.token] = vim.tbl_extend('force', tokens[result.token] or {}, value)
  return on_progress(err, result, ctx, config)
end

local function main()
  local python = env('LSP_MEMORY_NVIM_PYTHON')
  local doc, vault = env('LSP_MEMORY_NVIM_DOC'), env('LSP_MEMORY_NVIM_VAULT')
  local other = env('LSP_MEMORY_NVIM_OTHER')

  local v = vim.version()
  out(('# nvim %d.%d.%d'):format(v.major, v.minor, v.patch))
  -- A user's init.lua, with filetype detection as any configuration has it.
  vim.cmd('filetype on')
  local plugin = require('lsp_memory')
  plugin.setup({
    cmd = { python, '-m', 'lsp_memory', 'serve' },
    settings = { lspMemory = { budget = BUDGET } },
  })
  local source = vim.api.nvim_get_runtime_file('lua/lsp_memory/init.lua', false)[1]
  check('the plugin is loaded from editors/nvim on the runtimepath',
    source and contains(source, 'editors/nvim/lua/lsp_memory/init.lua'), source)
  local commands = { 'LspMemoryBuildContext', 'LspMemorySearch', 'LspMemoryReindex',
    'LspMemoryRemember', 'LspMemoryRestart', 'LspMemoryUnlinkedMentions' }
  local defined = vim.tbl_filter(function(name)
    return vim.fn.exists(':' .. name) == 2
  end, commands)
  check('setup() defines the user commands', #defined == #commands, defined)
  check('no notification from setup()', #notes == 0, notes)

  vim.cmd('edit ' .. vim.fn.fnameescape(doc))
  local bufnr = vim.api.nvim_get_current_buf()
  check(':edit gives the note the markdown filetype', vim.bo[bufnr].filetype == 'markdown',
    vim.bo[bufnr].filetype)

  local client = plugin.client(bufnr)
  check('the FileType autocmd started a client and attached the note',
    client ~= nil and vim.lsp.buf_is_attached(bufnr, client.id), client and client.id)
  if not client then error('no client: nothing else can be checked') end
  check('root: the nearest folder with lsp-memory.toml (the note is in a subfolder)',
    realpath(client.config.root_dir) == realpath(vault), client.config.root_dir)
  check('initialized', wait_for(function() return client.initialized == true end))

  -- The first sync's $/progress: begin (title), then end (kind = 'end', the final message).
  local function indexed(c)
    return wait_for(function()
      for _, p in pairs(progress[c.id] or {}) do
        if p.title == 'lsp-memory: indexing' and p.kind == 'end' then
          return contains(p.message, 'index ready')
        end
      end
      return false
    end)
  end
  check('indexing finished (index ready)', indexed(client), progress)

  -- A second note of the same vault shares the client; a note elsewhere would not.
  vim.cmd('edit ' .. vim.fn.fnameescape(vault .. '/project-plan.md'))
  local plan = vim.api.nvim_get_current_buf()
  check('a second note of the vault is attached to the same client',
    vim.lsp.buf_is_attached(plan, client.id) and #get_clients() == 1,
    vim.tbl_map(function(c) return c.id end, get_clients()))
  vim.cmd('buffer ' .. bufnr)
  check('root without markers: the file\'s folder',
    require('lsp_memory.client').find_root(doc, { 'no-such-marker-a1b2' })
      == vim.fn.fnamemodify(doc, ':h'), doc)

  -- :LspMemoryBuildContext
  local before, windows = #notes, #vim.api.nvim_tabpage_list_wins(0)
  vim.cmd('LspMemoryBuildContext')
  wait_for(function() return vim.bo.buftype == 'nofile' end)
  local scratch = vim.api.nvim_get_current_buf()
  local block = buffer_text(scratch)
  check('BuildContext: a scratch buffer in a new split',
    scratch ~= bufnr and vim.bo[scratch].buftype == 'nofile'
      and #vim.api.nvim_tabpage_list_wins(0) == windows + 1,
    { buftype = vim.bo[scratch].buftype, windows = #vim.api.nvim_tabpage_list_wins(0) })
  check('BuildContext: the scratch buffer is markdown and not attached to the server',
    vim.bo[scratch].filetype == 'markdown' and not vim.lsp.buf_is_attached(scratch, client.id),
    vim.bo[scratch].filetype)
  check('BuildContext: a ## User memory block', contains(block, '## User memory'), block)
  check('BuildContext: the [REFERENCED @leaf_active_a001] line',
    contains(block, '- [REFERENCED @leaf_active_a001] [fact] ' .. STATEMENT_1), block)
  local register = vim.fn.has('clipboard') == 1 and '+' or '"'
  check('BuildContext: register ' .. register .. ' holds the block',
    vim.fn.getreg(register) == block .. '\n' and vim.fn.getregtype(register) == 'V',
    vim.fn.getreg(register))
  local echoed = notes_since(before, nil, 'context block:')
  check('BuildContext: echoes tokens / budget from setup() settings',
    #echoed == 1 and echoed[1]:match('context block: %d+ / ' .. BUDGET .. ' tokens') ~= nil, echoed)
  check('BuildContext: no error', #notes_since(before, ERROR) == 0, notes_since(before, ERROR))

  -- Again from the note: the same buffer and window, refreshed.
  vim.cmd('wincmd p')
  windows = #vim.api.nvim_tabpage_list_wins(0)
  before = #notes
  vim.api.nvim_buf_set_lines(scratch, 0, -1, false, { 'stale' })
  vim.cmd('LspMemoryBuildContext 300')
  wait_for(function() return #notes_since(before, nil, 'context block:') > 0 end)
  check('BuildContext again: the same scratch buffer, no new window, the budget argument',
    vim.api.nvim_get_current_buf() == scratch and #vim.api.nvim_tabpage_list_wins(0) == windows
      and contains(buffer_text(scratch), '## User memory')
      and contains(notes_since(before, nil, 'context block:')[1], '/ 300 tokens'),
    notes_since(before))
  vim.cmd('wincmd p')
  before = #notes
  vim.cmd('LspMemoryBuildContext lots')
  check('BuildContext with a bad budget: one error', #notes_since(before, ERROR) == 1,
    notes_since(before))

  -- :LspMemorySearch, choosing the first hit
  local offered
  vim.ui.select = function(items, opts, on_choice)
    offered = { items = items, labels = vim.tbl_map(opts.format_item, items) }
    on_choice(items[1], 1)
  end
  local row, text = line_of(bufnr, 'Search result:')
  vim.api.nvim_win_set_cursor(0, { row, #text - 1 })
  vim.cmd('LspMemorySearch PostgreSQL')
  wait_for(function() return offered ~= nil end)
  local references = vim.tbl_map(function(hit) return hit.reference end,
    offered and offered.items or {})
  check('Search: vim.ui.select offers @leaf_active_a001', vim.tbl_contains(references,
    '@leaf_active_a001'), offered)
  local inserted = vim.api.nvim_buf_get_lines(bufnr, row - 1, row, false)[1]
  check('Search: the chosen reference is inserted at the cursor',
    references[1] ~= nil and inserted == 'Search result:' .. references[1], inserted)

  -- :LspMemoryReindex
  before = #notes
  vim.cmd('LspMemoryReindex')
  wait_for(function() return #notes_since(before) > 0 end)
  check('Reindex: answered, no error', #notes_since(before, nil, 'reindexing') == 1
    and #notes_since(before, ERROR) == 0, notes_since(before))

  -- :LspMemoryUnlinkedMentions: mentions-check.md names "plugin check" without a link
  before = #notes
  local listed = nil
  require('lsp_memory.actions').unlinked_mentions({ on_done = function(found) listed = found end })
  wait_for(function() return listed ~= nil end)
  local qf = vim.fn.getqflist({ items = 0, title = 0 })
  local first = qf.items[1] or {}
  check('UnlinkedMentions: one quickfix item on mentions-check.md, line 3, column 5',
    #qf.items == 1 and contains(vim.api.nvim_buf_get_name(first.bufnr or 0), 'mentions-check.md')
      and first.lnum == 3 and first.col == 5, { qf, listed })
  check('UnlinkedMentions: said so, no error', #notes_since(before, nil, '1 unlinked mention') == 1
    and #notes_since(before, ERROR) == 0, notes_since(before))
  vim.cmd('cclose')
  check('UnlinkedMentions: back in the note', vim.api.nvim_get_current_buf() == bufnr,
    vim.api.nvim_get_current_buf())

  -- :'<,'>LspMemoryRemember! on a characterwise selection ending in an emoji
  row = line_of(bufnr, 'Remember me:')
  vim.api.nvim_win_set_cursor(0, { row, 0 })
  vim.cmd('normal! fIvg_\27')
  before = #notes
  vim.cmd("'<,'>LspMemoryRemember!")
  wait_for(function() return #notes_since(before) > 0 end)
  local remembered = (notes_since(before, nil, 'remembered as')[1] or ''):match('(@[%w_]+)$')
  local line = vim.api.nvim_buf_get_lines(bufnr, row - 1, row, false)[1]
  check('Remember!: the selection became the new claim\'s reference',
    remembered ~= nil and line == 'Remember me: ' .. remembered, { notes_since(before), line })

  -- :LspMemoryRestart keeps the documents' state: unsaved text reaches the new server.
  vim.api.nvim_buf_set_lines(bufnr, -1, -1, false, { 'Unsaved: @knee_pain_b014' })
  local old = client
  before = #notes
  vim.cmd('LspMemoryRestart')
  client = plugin.client(bufnr)
  check('Restart: a new client, the old one gone',
    client ~= nil and client.id ~= old.id and vim.lsp.get_client_by_id(old.id) == nil,
    { old = old.id, new = client and client.id })
  if not client then error('no client after the restart') end
  check('Restart: both notes re-attached to it', vim.lsp.buf_is_attached(bufnr, client.id)
    and vim.lsp.buf_is_attached(plan, client.id), notes_since(before))
  check('Restart: said so once, no error', #notes_since(before, nil, 'restarted') == 1
    and #notes_since(before, ERROR) == 0 and #notes_since(before, WARN) == 0, notes_since(before))
  check('Restart: the new server indexed', indexed(client), progress)

  local function hover()
    local hover_row = line_of(bufnr, '@leaf_active_a001')
    local col = select(2, line_of(bufnr, '@leaf_active_a001')):find('@leaf_active_a001', 1, true)
    local answers = vim.lsp.buf_request_sync(bufnr, 'textDocument/hover', {
      textDocument = { uri = vim.uri_from_bufnr(bufnr) },
      position = { line = hover_row - 1, character = col }, -- ASCII line: bytes = UTF-16
    }, TIMEOUT_MS)
    local answer = answers and answers[client.id]
    local contents = answer and answer.result and answer.result.contents
    return type(contents) == 'table' and contents.value or contents
  end
  check('Restart: hover works', contains(hover(), STATEMENT_1), hover())

  local context
  plugin.build_context({ on_done = function(result) context = result end })
  wait_for(function() return context ~= nil end)
  check('Restart: the new server has the unsaved text (its reference is in the block)',
    context and contains(context.markdown, '[REFERENCED @knee_pain_b014]'), context)
  vim.cmd('wincmd p')

  -- A crash: one message with how to restart, nothing restarts by itself.
  local servers = vim.api.nvim_get_proc_children(vim.fn.getpid())
  check('Crash: the server is the one child process', #servers == 1, servers)
  before = #notes
  vim.loop.kill(servers[1], 9)
  wait_for(function() return plugin.client(bufnr) == nil end)
  wait_for(function() return #notes_since(before, ERROR) > 0 end)
  vim.wait(500) -- anything else it would say comes now
  vim.cmd('edit ' .. vim.fn.fnameescape(vault .. '/alice.md'))
  vim.wait(500)
  local said = notes_since(before, ERROR, 'lsp-memory')
  check('Crash: exactly one lsp-memory error, naming :LspMemoryRestart',
    #said == 1 and contains(said[1], ':LspMemoryRestart') and contains(said[1], 'signal 9'),
    notes_since(before))
  check('Crash: opening another note starts nothing', #get_clients() == 0,
    get_clients())
  before = #notes
  vim.cmd('buffer ' .. bufnr)
  vim.cmd('LspMemoryReindex')
  said = notes_since(before, ERROR)
  check('Crash: a command says to restart', #said == 1 and contains(said[1], ':LspMemoryRestart'),
    notes_since(before))
  before = #notes
  vim.cmd('LspMemoryRestart')
  client = plugin.client(bufnr)
  local alice = vim.fn.bufnr(vault .. '/alice.md')
  check('Crash: :LspMemoryRestart brings it back, the three notes attached', client ~= nil
    and vim.lsp.buf_is_attached(bufnr, client.id) and vim.lsp.buf_is_attached(plan, client.id)
    and vim.lsp.buf_is_attached(alice, client.id) and #notes_since(before, ERROR) == 0,
    { client = client and client.id, notes = notes_since(before) })
  if client then
    check('Crash: hover works after the restart', wait_for(function() return client.initialized end)
      and contains(hover(), STATEMENT_1), hover())
  end

  -- A server that fails as it starts: said once, however many notes of its root open.
  before = #notes
  plugin.setup({ cmd = { python, '-c', 'import sys; sys.exit(3)' } })
  vim.cmd('edit ' .. vim.fn.fnameescape(other .. '/a.md'))
  wait_for(function() return #notes_since(before, ERROR) > 0 end)
  vim.cmd('edit ' .. vim.fn.fnameescape(other .. '/sub/b.md'))
  vim.wait(500)
  said = notes_since(before, ERROR, 'lsp-memory')
  check('Start failure: exactly one lsp-memory error (exit code 3), no retry for a second note',
    #said == 1 and contains(said[1], 'exit code 3') and plugin.client(0) == nil,
    notes_since(before))

  -- A missing server: said once, however many notes open, and again only on a restart.
  before = #notes
  plugin.setup({ cmd = { '/nonexistent/lsp-memory', 'serve' } })
  vim.cmd('edit ' .. vim.fn.fnameescape(other .. '/a.md'))
  vim.cmd('edit ' .. vim.fn.fnameescape(other .. '/sub/b.md'))
  vim.cmd('edit ' .. vim.fn.fnameescape(other .. '/a.md'))
  vim.wait(300)
  said = notes_since(before)
  check('Missing server: exactly one notification, an error naming the command',
    #said == 1 and #notes_since(before, ERROR, '/nonexistent/lsp-memory') == 1, said)
  check('Missing server: no client, no loop', plugin.client(0) == nil
    and #get_clients() == (client and 1 or 0), get_clients())
  before = #notes
  vim.cmd('LspMemoryRestart')
  said = notes_since(before, ERROR)
  check('Missing server: :LspMemoryRestart says it once more', #said == 1
    and contains(said[1], '/nonexistent/lsp-memory') and #get_clients() == 0,
    notes_since(before))

  -- The help file: valid tags for the commands and setup().
  local help = env('LSP_MEMORY_NVIM_HELP')
  local doc_file = vim.api.nvim_get_runtime_file('doc/lsp_memory.txt', false)[1]
  vim.fn.writefile(vim.fn.readfile(doc_file), help .. '/lsp_memory.txt')
  vim.v.errmsg = ''
  local ok, err = pcall(vim.cmd, 'helptags ' .. vim.fn.fnameescape(help))
  local tags = table.concat(vim.fn.readfile(help .. '/tags'), '\n')
  local wanted = { 'lsp-memory', 'lsp_memory.setup()', ':LspMemoryBuildContext', ':LspMemorySearch',
    ':LspMemoryReindex', ':LspMemoryRestart', ':LspMemoryUnlinkedMentions',
    'lsp-memory-troubleshooting' }
  local absent = vim.tbl_filter(function(tag) return not contains(tags, tag .. '\t') end, wanted)
  check('help file: :helptags succeeds with the expected tags', ok and vim.v.errmsg == ''
    and #absent == 0, { err = err, errmsg = vim.v.errmsg, absent = absent })
end

local ok, err = xpcall(main, debug.traceback)
if not ok then
  -- Without this an error would leave headless Neovim waiting for input until the timeout.
  out('FAIL script error ' .. tostring(err))
  failures = failures + 1
end
if failures == 0 then vim.cmd('qa!') else vim.cmd('cq 1') end
