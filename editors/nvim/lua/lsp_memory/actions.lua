-- What the user commands do: each runs one of the server's `workspace/executeCommand`
-- commands (lsp_memory/lsp/features/commands.py) for the current buffer and shows the answer.
local compat = require('lsp_memory.compat')
local clients = require('lsp_memory.client')

local M = {}

local notify = clients.notify
local ERROR, WARN = vim.log.levels.ERROR, vim.log.levels.WARN

local options -- the resolved setup() options (init.lua)

function M.configure(resolved)
  options = resolved
end

--- The buffer's initialized client, or nil after telling the user why not. A client that is
--- still starting is waited for (the server answers `initialize` in well under a second).
local function ready_client(bufnr)
  local client, why = clients.get(bufnr)
  if client == nil then
    notify(why, ERROR)
    return nil
  end
  if not vim.wait(options.timeout_ms, function() return client.initialized == true end, 20) then
    notify('the language server did not finish starting; see :help lsp-memory-troubleshooting',
      ERROR)
    return nil
  end
  return client
end

--- Runs a server command; `on_result(result)` on success, one error message otherwise.
local function execute(client, bufnr, command, arguments, on_result)
  local params = { command = command, arguments = arguments }
  compat.call(client, 'request', 'workspace/executeCommand', params, function(err, result)
    if err then
      notify(('%s failed: %s'):format(command, err.message or vim.inspect(err)), ERROR)
      return
    end
    on_result(result)
  end, bufnr)
end

local function lines_of(text)
  text = text:gsub('\n$', '')
  return vim.split(text, '\n', { plain = true })
end

local scratch = {} -- source buffer -> its context block's scratch buffer

--- The scratch buffer showing `source`'s context block, created on first use.
local function scratch_buffer(source)
  local bufnr = scratch[source]
  if bufnr and vim.api.nvim_buf_is_valid(bufnr) then
    return bufnr
  end
  bufnr = vim.api.nvim_create_buf(false, true) -- unlisted, scratch: buftype=nofile, no swap
  vim.bo[bufnr].bufhidden = 'wipe'
  local name = vim.fn.fnamemodify(vim.api.nvim_buf_get_name(source), ':t')
  pcall(vim.api.nvim_buf_set_name, bufnr, ('lsp-memory://context/%d/%s'):format(source, name))
  -- buftype is nofile before the filetype is set, so the FileType autocmd leaves it alone.
  vim.bo[bufnr].filetype = 'markdown'
  scratch[source] = bufnr
  return bufnr
end

--- Shows `bufnr` in a window of the current tab: the one already showing it, else a new
--- split (options.split); focuses it.
local function show(bufnr)
  for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
    if vim.api.nvim_win_get_buf(win) == bufnr then
      vim.api.nvim_set_current_win(win)
      return
    end
  end
  vim.cmd(options.split)
  vim.api.nvim_win_set_buf(0, bufnr)
end

local function register()
  if options.register then
    return options.register
  end
  return vim.fn.has('clipboard') == 1 and '+' or '"'
end

--- What a reference-count code lens ("N references" on a note's title or heading) runs,
--- through vim.lsp.codelens.run(): the server's lspMemory.showReferences answers the links'
--- locations, which go to the quickfix list (opened), as vim.lsp.buf.references() does.
--- `command` is the lens's command, `ctx` has its client_id and bufnr.
function M.show_references(command, ctx)
  local client = vim.lsp.get_client_by_id(ctx.client_id)
  if client == nil then
    return
  end
  execute(client, ctx.bufnr, command.command, command.arguments, function(result)
    if type(result) ~= 'table' or vim.tbl_isempty(result) then
      notify('no links to this note or heading')
      return
    end
    local items = vim.lsp.util.locations_to_items(result, client.offset_encoding)
    vim.fn.setqflist({}, ' ', { title = 'lsp-memory: ' .. command.title, items = items })
    vim.cmd('botright copen')
  end)
end

--- :LspMemoryBuildContext [budget]: the current note's context block in a scratch buffer,
--- also yanked to a register; the size and the warnings echoed.
function M.build_context(opts)
  opts = opts or {}
  local source = vim.api.nvim_get_current_buf()
  local client = ready_client(source)
  if client == nil then
    return
  end
  local arguments = { vim.uri_from_bufnr(source) }
  local build = {}
  for _, key in ipairs({ 'budget', 'attach', 'pin', 'query' }) do
    build[key] = opts[key]
  end
  if next(build) then
    table.insert(arguments, build)
  end
  execute(client, source, 'lspMemory.buildContext', arguments, function(result)
    if type(result) ~= 'table' or type(result.markdown) ~= 'string' then
      notify('lspMemory.buildContext returned no block: ' .. vim.inspect(result), ERROR)
      return
    end
    local lines = lines_of(result.markdown)
    local bufnr = scratch_buffer(source)
    vim.api.nvim_buf_set_lines(bufnr, 0, -1, false, lines)
    vim.bo[bufnr].modified = false
    show(bufnr)
    local reg = register()
    vim.fn.setreg(reg, lines, 'l')
    notify(('context block: %d / %d tokens%s, copied to register %s'):format(
      result.tokens or 0,
      result.budget or 0,
      result.over_budget and ' (over budget)' or '',
      reg
    ))
    local warnings = result.warnings or {}
    if #warnings > 0 then
      notify(#warnings .. ' warning(s):\n- ' .. table.concat(warnings, '\n- '), WARN)
    end
    if opts.on_done then
      opts.on_done(result, bufnr)
    end
  end)
end

local function describe(hit)
  local label = hit.reference or '?'
  local text = hit.title or ''
  if hit.snippet and hit.snippet ~= '' and hit.snippet ~= hit.title then
    text = text .. ' — ' .. hit.snippet
  end
  text = text:gsub('%s+', ' ')
  return ('%-5s %s  %s'):format(hit.kind or '', label, text)
end

--- Inserts `text` after the cursor of `win` (like `p` of a characterwise register) and puts
--- the cursor on its last character.
local function insert_at_cursor(win, text)
  if not vim.api.nvim_win_is_valid(win) then
    notify('the window to insert into was closed', WARN)
    return
  end
  vim.api.nvim_set_current_win(win)
  vim.api.nvim_put({ text }, 'c', true, true)
end

--- :LspMemorySearch {query}: the hybrid search's hits in vim.ui.select; the chosen one's
--- reference (`@friendly_id`, `[[Note]]`) is inserted at the cursor.
function M.search(query, opts)
  opts = opts or {}
  local bufnr = vim.api.nvim_get_current_buf()
  local win = vim.api.nvim_get_current_win()
  if query == nil or vim.trim(query) == '' then
    vim.ui.input({ prompt = 'Search memory: ' }, function(input)
      if input and vim.trim(input) ~= '' then
        M.search(input, opts)
      end
    end)
    return
  end
  local client = ready_client(bufnr)
  if client == nil then
    return
  end
  local arguments = { query, opts.kind or options.search.kind, opts.k or options.search.k }
  execute(client, bufnr, 'lspMemory.search', arguments, function(hits)
    if type(hits) ~= 'table' or #hits == 0 then
      notify(('nothing found for %q'):format(query), WARN)
      return
    end
    vim.ui.select(hits, {
      prompt = ('lsp-memory: %q'):format(query),
      kind = 'lsp_memory',
      format_item = describe,
    }, function(hit)
      if hit and hit.reference then
        insert_at_cursor(win, hit.reference)
      end
    end)
  end)
end

--- :LspMemoryReindex: the server syncs its indexes now (progress is reported as usual).
function M.reindex()
  local bufnr = vim.api.nvim_get_current_buf()
  local client = ready_client(bufnr)
  if client == nil then
    return
  end
  execute(client, bufnr, 'lspMemory.reindex', {}, function()
    notify('reindexing')
  end)
end

--- The answer of lspMemory.unlinkedMentions for `bufnr` in the quickfix list, opened when it
--- has a mention.
local function show_mentions(bufnr, client, found)
  local name = vim.fn.fnamemodify(vim.api.nvim_buf_get_name(bufnr), ':t')
  local title = 'lsp-memory: unlinked mentions of ' .. name
  if type(found) ~= 'table' or #found == 0 then
    vim.fn.setqflist({}, ' ', { title = title, items = {} })
    notify(('no unlinked mentions of %s'):format(name))
    return
  end
  local items = vim.lsp.util.locations_to_items(found, client.offset_encoding or 'utf-16')
  vim.fn.setqflist({}, ' ', { title = title, items = items })
  vim.cmd('copen')
  notify(('%d unlinked mention(s) of %s'):format(#items, name))
end

--- :LspMemoryUnlinkedMentions: the notes that mention the current note without linking it,
--- in the quickfix list (each mention's line); `opts.on_done(result)` afterwards.
function M.unlinked_mentions(opts)
  opts = opts or {}
  local bufnr = vim.api.nvim_get_current_buf()
  local client = ready_client(bufnr)
  if client ~= nil then
    execute(client, bufnr, 'lspMemory.unlinkedMentions', { vim.uri_from_bufnr(bufnr) },
      function(found)
        show_mentions(bufnr, client, found)
        if opts.on_done then opts.on_done(found) end
      end)
  end
end

--- The LSP character of byte `col` on `row` in the client's position encoding.
local function character(bufnr, row, col, encoding)
  if col == 0 then
    return 0
  end
  return vim.lsp.util.character_offset(bufnr, row, col, encoding)
end

--- The selection of a command range as an LSP range: characterwise from the `'<` and `'>`
--- marks when the range is the last visual selection made in `v` mode, whole lines otherwise.
local function selection_range(bufnr, line1, line2, encoding)
  local first = vim.api.nvim_buf_get_mark(bufnr, '<') -- { row (1-based), byte col }
  local last = vim.api.nvim_buf_get_mark(bufnr, '>')
  local from_row, from_col, to_row, to_col = line1 - 1, 0, line2, 0 -- up to the next line
  if vim.fn.visualmode() == 'v' and first[1] == line1 and last[1] == line2 then
    local text = vim.api.nvim_buf_get_lines(bufnr, line2 - 1, line2, false)[1] or ''
    local last_char = vim.fn.strcharpart(text:sub(last[2] + 1), 0, 1) -- may be multibyte
    from_col = first[2]
    to_row, to_col = line2 - 1, math.min(last[2] + #last_char, #text)
  end
  local line_count = vim.api.nvim_buf_line_count(bufnr)
  if to_row >= line_count then -- the last line has no next line: end at its end
    to_row = line_count - 1
    to_col = #(vim.api.nvim_buf_get_lines(bufnr, to_row, to_row + 1, false)[1] or '')
  end
  return {
    start = { line = from_row, character = character(bufnr, from_row, from_col, encoding) },
    ['end'] = { line = to_row, character = character(bufnr, to_row, to_col, encoding) },
  }
end

--- :[range]LspMemoryRemember[!]: stores the selection (or the lines) as a claim; with ! the
--- server also replaces it with the new claim's reference.
function M.remember(line1, line2, replace)
  local bufnr = vim.api.nvim_get_current_buf()
  local client = ready_client(bufnr)
  if client == nil then
    return
  end
  local range = selection_range(bufnr, line1, line2, client.offset_encoding or 'utf-16')
  local arguments = { vim.uri_from_bufnr(bufnr), range, replace == true }
  execute(client, bufnr, 'lspMemory.rememberSelection', arguments, function(claim)
    notify(('remembered as %s'):format(claim and claim.reference or '?'))
  end)
end

return M
