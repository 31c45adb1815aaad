-- A headless Neovim 0.7 client of `python -m lsp_memory serve`, run by tests/nvim/test_headless.py:
-- it opens the note that test wrote into the vault and checks what a user would see, printing
-- one `PASS name` or `FAIL name detail` line per check, then quits with 0 (all passed) or 1.
--
-- Environment: LSP_MEMORY_NVIM_PYTHON (the interpreter), LSP_MEMORY_NVIM_DOC (the note, inside
-- the vault), LSP_MEMORY_NVIM_VAULT (the vault: the root and only workspace folder), and the
-- server's own LSP_MEMORY_STORE / LSP_MEMORY_USER. Run with -u NONE -i NONE and stdin closed.
--
-- Neovim 0.7 API only (Debian's 0.7.2): vim.lsp.start_client + buf_attach_client, no vim.lsp.start.

local TIMEOUT_MS = 10000
local STATEMENT_1 = 'The Leaf service uses PostgreSQL 16' -- claim #1, @leaf_active_a001
local STATEMENT_42 = 'I prefer to do deep work in the morning' -- claim #42, @prefer_morning_a3f2
local REMEMBERED = 'Remember me: I cycle to work on Mondays 🚲'

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

local function read(path)
  local f = io.open(path, 'r')
  if not f then return nil end
  local text = f:read('*a')
  f:close()
  return text
end

local function contains(text, needle)
  return type(text) == 'string' and text:find(needle, 1, true) ~= nil
end

local function same_file(a, b)
  return a ~= nil and vim.loop.fs_realpath(a) == vim.loop.fs_realpath(b)
end

local function wait_for(condition)
  return vim.wait(TIMEOUT_MS, condition, 20)
end

local function main()
  local python = env('LSP_MEMORY_NVIM_PYTHON')
  local doc, vault = env('LSP_MEMORY_NVIM_DOC'), env('LSP_MEMORY_NVIM_VAULT')

  vim.cmd('edit ' .. vim.fn.fnameescape(doc))
  local bufnr = vim.api.nvim_get_current_buf()
  vim.bo[bufnr].filetype = 'markdown' -- -u NONE has no ftdetect; languageId comes from filetype
  local uri = vim.uri_from_bufnr(bufnr)

  local state = { diagnostics = {}, logs = {} }
  local client_id = vim.lsp.start_client({
    name = 'lsp-memory',
    cmd = { python, '-m', 'lsp_memory', 'serve' },
    root_dir = vault, -- 0.7 sends it as rootUri and as the only workspace folder
    flags = { debounce_text_changes = 0 }, -- send each didChange at once
    handlers = {
      ['textDocument/publishDiagnostics'] = function(_, result)
        state.diagnostics[result.uri] = result.diagnostics
      end,
      ['window/logMessage'] = function(_, result)
        table.insert(state.logs, result.message)
      end,
    },
    on_exit = function(code) state.exit_code = code end,
  })
  check('client started', client_id ~= nil, client_id)
  vim.lsp.buf_attach_client(bufnr, client_id) -- didOpen is sent once initialized

  local function client() return vim.lsp.get_client_by_id(client_id) end

  local function line_of(needle)
    for row, text in ipairs(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)) do
      local byte = text:find(needle, 1, true)
      if byte then return row - 1, text, byte - 1 end
    end
    error('not in the buffer: ' .. needle)
  end

  -- The LSP position `delta` bytes into the first `needle` of the buffer (default 1: inside
  -- it; #needle: right after it), in UTF-16 code units: what 0.7 negotiates.
  local function position(needle, delta)
    local row, text, byte = line_of(needle)
    local _, utf16 = vim.str_utfindex(text, byte + (delta or 1))
    return { line = row, character = utf16 }
  end

  local function at(needle, delta)
    return { textDocument = { uri = uri }, position = position(needle, delta) }
  end

  -- One request; its result, or nil and the error. 0.7 shapes the answer as
  -- { [client_id] = { result = ..., error = ... } }, or returns nil, 'timeout'.
  local function request(method, params)
    local answers, err = vim.lsp.buf_request_sync(bufnr, method, params, TIMEOUT_MS)
    if not answers then return nil, err end
    local answer = answers[client_id]
    if not answer then return nil, 'no answer from the client' end
    if answer.error then return nil, answer.error end
    return answer.result
  end

  local function command(name, arguments)
    return request('workspace/executeCommand', { command = name, arguments = arguments })
  end

  local function labels(result)
    local items = result and (result.items or result) or {}
    return vim.tbl_map(function(item) return item.label end, items)
  end

  local function hover_text(result)
    local contents = result and result.contents
    return type(contents) == 'table' and contents.value or contents
  end

  -- The path of a definition's target: a Location, or the first of a Location[].
  local function target(result)
    local first = result and (result.uri and result or result[1])
    local target_uri = first and (first.uri or first.targetUri)
    return target_uri and vim.startswith(target_uri, 'file://') and vim.uri_to_fname(target_uri)
  end

  -- The document's last published diagnostics that start where `needle` starts.
  local function diagnostics_on(needle)
    local start = position(needle, 0)
    return vim.tbl_filter(function(d)
      return d.range.start.line == start.line and d.range.start.character == start.character
    end, state.diagnostics[uri] or {})
  end

  check('initialized', wait_for(function()
    local c = client()
    return c ~= nil and c.initialized == true
  end))

  -- 0.7 keeps $/progress in client.messages.progress[token], with done = true after `end`.
  local progress
  wait_for(function()
    for _, p in pairs(client() and client().messages.progress or {}) do
      if p.title == 'lsp-memory: indexing' and p.done then
        progress = p
        return true
      end
    end
    return false
  end)
  check('indexing $/progress reached its end', progress ~= nil,
    client() and client().messages.progress)
  check('index ready message', progress and contains(progress.message, 'index ready'), progress)

  -- Diagnostics after didOpen: the server holds them until the first index sync ends.
  wait_for(function() return state.diagnostics[uri] ~= nil end)
  local broken = diagnostics_on('@no_such_thing_xyz')
  check('diagnostic: warning on @no_such_thing_xyz (after an emoji)', #broken == 1
    and broken[1].severity == vim.lsp.protocol.DiagnosticSeverity.Warning
    and contains(broken[1].message, 'no_such_thing_xyz'), state.diagnostics[uri])
  for _, needle in ipairs({ '@leaf_active_a001', '#42', '[[Project Plan]]' }) do
    check('diagnostic: none on ' .. needle, #diagnostics_on(needle) == 0, state.diagnostics[uri])
  end

  local r, e = request('textDocument/completion', at('@pre', #'@pre'))
  check('completion @pre', vim.tbl_contains(labels(r), '@prefer_morning_a3f2'), e or labels(r))
  r, e = request('textDocument/completion', at('number: #4', #'number: #4'))
  check('completion #4', vim.tbl_contains(labels(r), '#42'), e or labels(r))
  r, e = request('textDocument/completion', at('[[Proj', #'[[Proj'))
  check('completion [[Proj', vim.tbl_contains(labels(r), 'Project Plan'), e or labels(r))

  r, e = request('textDocument/hover', at('@leaf_active_a001'))
  check('hover @leaf_active_a001', contains(hover_text(r), STATEMENT_1), e or r)
  r, e = request('textDocument/hover', at('#42'))
  check('hover #42', contains(hover_text(r), STATEMENT_42), e or r)
  r, e = request('textDocument/hover', at('[[Project Plan]]', 3))
  check('hover [[Project Plan]] (after an emoji)',
    contains(hover_text(r), '[[Project Plan]]'), e or r)

  r, e = request('textDocument/definition', at('[[Project Plan]]', 3))
  check('definition [[Project Plan]] -> project-plan.md',
    same_file(target(r), vault .. '/project-plan.md'), e or r)
  r, e = request('textDocument/definition', at('@leaf_active_a001'))
  local page = target(r)
  check('definition @leaf_active_a001 -> a generated .md page on disk',
    page and vim.endswith(page, '.md') and contains(read(page), STATEMENT_1),
    e or { result = r, exists = page and vim.loop.fs_stat(page) ~= nil })

  -- An incremental didChange that fixes the broken reference: nvim_buf_set_text takes bytes,
  -- 0.7 sends the range in UTF-16 (an emoji precedes it). Diagnostics are debounced 0.3 s.
  local row, _, byte = line_of('@no_such_thing_xyz')
  state.diagnostics[uri] = nil
  vim.api.nvim_buf_set_text(bufnr, row, byte + 1, row, byte + #'@no_such_thing_xyz', { 'leaf_ctx' })
  local edited = vim.api.nvim_buf_get_lines(bufnr, row, row + 1, false)[1]
  check('buffer edited', edited == 'Broken 🚀 @leaf_ctx here', edited)
  wait_for(function() return state.diagnostics[uri] ~= nil end)
  local after = state.diagnostics[uri]
  local stale = vim.tbl_filter(function(d) return contains(d.message, 'no_such_thing_xyz') end,
    after or {})
  check('diagnostics after the edit: no warning on the fixed reference',
    after ~= nil and #stale == 0 and #diagnostics_on('@leaf_ctx') == 0, after)

  -- The server's copy of the document followed the incremental change.
  r, e = command('lspMemory.buildContext', { uri })
  local markdown = r and r.markdown or ''
  local warned = vim.tbl_filter(function(w) return contains(w, 'no_such_thing_xyz') end,
    r and r.warnings or {})
  check('buildContext sees the edit', contains(markdown, '[REFERENCED @leaf_ctx]')
    and #warned == 0, e or r)

  r, e = request('textDocument/codeLens', { textDocument = { uri = uri } })
  local lens = r and r[1]
  check('code lens with the block size', lens and lens.command
    and lens.command.title:match('^context: %d+ / 1500 tokens$') ~= nil, e or r)

  r, e = command('lspMemory.noSuchCommand', {})
  check('unknown command -> error response', r == nil and type(e) == 'table' and e.code ~= nil,
    { result = r, error = e })
  r, e = request('textDocument/hover', at('@leaf_active_a001'))
  check('hover still answers after the error', contains(hover_text(r), STATEMENT_1), e or r)

  -- Arguments are positional: query, then optionally kind and k (lsp/features/commands.py).
  r, e = command('lspMemory.search', { 'PostgreSQL', 'claim', 5 })
  local references = vim.tbl_map(function(hit) return hit.reference end, r or {})
  check('lspMemory.search PostgreSQL', vim.tbl_contains(references, '@leaf_active_a001'), e or r)

  r, e = request('workspace/symbol', { query = 'Leaf service PostgreSQL' })
  local names = vim.tbl_map(function(symbol) return symbol.name end, r or {})
  check('workspace/symbol finds the claim', vim.tbl_contains(names, STATEMENT_1), e or names)

  -- A selection's code actions: "Remember selection as a claim", and with "… and replace".
  local row_s, text_s, byte_s = line_of('Remember me')
  local _, from = vim.str_utfindex(text_s, byte_s)
  local _, to = vim.str_utfindex(text_s, #text_s)
  r, e = request('textDocument/codeAction', {
    textDocument = { uri = uri },
    range = { start = { line = row_s, character = from }, ['end'] = { line = row_s, character = to } },
    context = { diagnostics = {} },
  })
  local titles = vim.tbl_map(function(action) return action.title end, r or {})
  check('code actions on a selection', vim.tbl_contains(titles, 'Remember selection as a claim'),
    e or titles)
  local action = r and r[1]
  if action and action.command then
    local added, error = command(action.command.command, action.command.arguments)
    check('Remember selection stores the claim', added and added.statement == REMEMBERED,
      error or added)
  end

  -- Related notes: the paragraph about walking is offered the claim it means (asked again
  -- while the embedding helper starts: a request meanwhile answers nothing).
  local related = {}
  for _ = 1, 100 do
    r, e = request('textDocument/codeAction', {
      textDocument = { uri = uri },
      range = { start = position('Steps:'), ['end'] = position('Steps:') },
      context = { diagnostics = {}, only = { 'refactor.rewrite' } },
    })
    related = vim.tbl_map(function(action) return action.title end, r or {})
    if #related > 0 then break end
    vim.wait(100)
  end
  check('related-note code actions listed',
    related[1] == 'Reference @health_goal_b011: Walk 8000 steps every day', e or related)

  r, e = request('textDocument/references',
    vim.tbl_extend('force', at('@leaf_active_a001'), { context = { includeDeclaration = true } }))
  local here = vim.tbl_filter(function(location) return location.uri == uri end, r or {})
  check('references of @leaf_active_a001 include this note', #here == 1, e or r)
  r, e = request('textDocument/documentHighlight', at('#42'))
  check('document highlight on #42', r and #r == 1, e or r)
  r, e = request('textDocument/prepareRename', at('@leaf_active_a001'))
  check('prepareRename @leaf_active_a001', r and r.placeholder == 'leaf_active_a001', e or r)
  r, e = request('textDocument/rename',
    vim.tbl_extend('force', at('@leaf_active_a001'), { newName = 'leaf_postgres' }))
  local edits = r and (r.changes and r.changes[uri]
    or (r.documentChanges and r.documentChanges[1] and r.documentChanges[1].edits)) or {}
  check('rename returns the edit of this note',
    #edits == 1 and edits[1].newText == 'leaf_postgres', e or r)

  vim.lsp.stop_client(client_id) -- shutdown, then exit
  wait_for(function() return state.exit_code ~= nil end)
  check('server exited with code 0', state.exit_code == 0, state.exit_code)

  -- 0.7 logs the server's stderr to lsp.log (in the test's XDG_CACHE_HOME): problems such as
  -- the unknown command above are one line each there, never a traceback.
  local log = read(vim.lsp.get_log_path()) or ''
  check('no traceback from the server', not contains(log, 'Traceback'), log)
  check('the unknown command logged on one line', contains(log, 'noSuchCommand'), log)

  if failures > 0 then out('# window/logMessage: ' .. vim.inspect(state.logs)) end
end

local ok, err = xpcall(main, debug.traceback)
if not ok then
  -- Without this an error would leave headless Neovim waiting for input until the timeout.
  out('FAIL script error ' .. tostring(err))
  failures = failures + 1
end
if failures == 0 then vim.cmd('qa!') else vim.cmd('cq 1') end
