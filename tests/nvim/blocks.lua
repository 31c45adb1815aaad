-- A headless Neovim 0.7 client of `python -m lsp_memory serve` checking block references and
-- embeds (tests/nvim/test_blocks.py): completion after `[[Blocks#^` lists the note's blocks,
-- the item of a block without an id runs its command and Neovim applies the edit the server
-- asks for (into its buffer of blocks.md), and hover on `![[Blocks#^para1]]` shows the block.
-- One `PASS name` / `FAIL name detail` line per check, then quits with 0 or 1.
--
-- Environment: LSP_MEMORY_NVIM_PYTHON, LSP_MEMORY_NVIM_DOC (the note to open, inside the
-- vault), LSP_MEMORY_NVIM_VAULT, and the server's LSP_MEMORY_STORE / LSP_MEMORY_USER.

local TIMEOUT_MS = 10000

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

local function main()
  local python = env('LSP_MEMORY_NVIM_PYTHON')
  local doc, vault = env('LSP_MEMORY_NVIM_DOC'), env('LSP_MEMORY_NVIM_VAULT')
  vim.cmd('edit ' .. vim.fn.fnameescape(doc))
  local bufnr = vim.api.nvim_get_current_buf()
  vim.bo[bufnr].filetype = 'markdown'
  local uri = vim.uri_from_bufnr(bufnr)
  local logs = {}
  local client_id = vim.lsp.start_client({
    name = 'lsp-memory',
    cmd = { python, '-m', 'lsp_memory', 'serve' },
    root_dir = vault,
    flags = { debounce_text_changes = 0 },
    handlers = {
      ['window/logMessage'] = function(_, result) table.insert(logs, result.message) end,
    },
  })
  check('client started', client_id ~= nil, client_id)
  vim.lsp.buf_attach_client(bufnr, client_id)
  -- 0.7 keeps $/progress in client.messages.progress[token], with done = true after `end`.
  -- The first sync embeds the fixture vault: slow on a loaded machine, hence the long wait.
  local ready = vim.wait(6 * TIMEOUT_MS, function()
    local client = vim.lsp.get_client_by_id(client_id)
    for _, p in pairs(client and client.messages.progress or {}) do
      if p.title == 'lsp-memory: indexing' and p.done then return true end
    end
    return false
  end, 20)
  check('index ready', ready, logs)

  local function position(needle, delta)
    for row, text in ipairs(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)) do
      local byte = text:find(needle, 1, true)
      if byte then
        local _, utf16 = vim.str_utfindex(text, byte - 1 + delta)
        return { line = row - 1, character = utf16 }
      end
    end
    error('not in the buffer: ' .. needle)
  end

  local function request(method, params)
    local answers, err = vim.lsp.buf_request_sync(bufnr, method, params, TIMEOUT_MS)
    if not answers then return nil, err end
    local answer = answers[client_id]
    if not answer then return nil, 'no answer' end
    if answer.error then return nil, answer.error end
    return answer.result
  end

  local r, e = request('textDocument/completion',
    { textDocument = { uri = uri }, position = position('[[Blocks#^', #'[[Blocks#^') })
  local items = r and (r.items or r) or {}
  local labels = vim.tbl_map(function(item) return item.label end, items)
  check('completion [[Blocks#^ lists the blocks',
    vim.deep_equal(labels, { 'First paragraph goes on. 🚀', 'item one', 'item two' }), e or labels)
  local first = items[1] or {}
  check('a block with an id shows it', first.detail == '^para1', first)
  local one = items[2] or {}
  local new_id = one.textEdit and one.textEdit.newText:match('^%^([%w-]+)%]%]$')
  check('a block without an id gets a new one', new_id ~= nil and #new_id == 6, one)
  if one.command then
    local answer, error = request('workspace/executeCommand',
      { command = one.command.command, arguments = one.command.arguments })
    check('the command says the edit was applied', answer and answer.applied == true, error or answer)
    -- Neovim applies the server's workspace/applyEdit to its buffer of the note (loading it).
    local target = vim.fn.bufnr(vault .. '/blocks.md')
    local lines = target >= 0 and vim.api.nvim_buf_get_lines(target, 0, -1, false) or {}
    check('the new id ends the item in the note', vim.tbl_contains(lines, '- item one ^' .. new_id),
      lines)
  else
    check('the item runs a command', false, one)
  end

  r, e = request('textDocument/hover',
    { textDocument = { uri = uri }, position = position('![[Blocks#^para1]]', 4) })
  local value = r and r.contents and r.contents.value
  check('hover of the embed shows the block', contains(value, '> First paragraph\n> goes on. 🚀'),
    e or r)

  vim.lsp.stop_client(client_id)
end

local ok, err = xpcall(main, debug.traceback)
if not ok then
  out('FAIL script error ' .. tostring(err))
  failures = failures + 1
end
if failures == 0 then vim.cmd('qa!') else vim.cmd('cq 1') end
