-- Semantic tokens and reference-count code lenses in a real Neovim (0.10+: semantic tokens
-- came in 0.9), with the plugin (editors/nvim) as a user sets it up; run by
-- tests/nvim/test_lens_tokens.py in `nvim --headless -u NONE -i NONE --cmd "set rtp+=editors/nvim"`.
-- Prints one `PASS name` or `FAIL name detail` line per check, then quits with 0 or 1.
--
-- Environment: LSP_MEMORY_NVIM_PYTHON (the interpreter), LSP_MEMORY_NVIM_DOC (a note with a
-- superseded claim's reference), LSP_MEMORY_NVIM_ALICE (the fixture vault's alice.md, linked
-- by two other notes), and the server's LSP_MEMORY_STORE / LSP_MEMORY_USER.

local TIMEOUT_MS = 20000

local here = debug.getinfo(1, 'S').source:sub(2):match('(.*/)') or './'
local checks = dofile(here .. 'checks.lua')
local out, check, env = checks.out, checks.check, checks.env

local function wait_for(condition)
  return vim.wait(TIMEOUT_MS, condition, 20)
end

vim.notify = function(message, level)
  out('# notify ' .. tostring(level) .. ' ' .. message:gsub('\n', ' | '))
end

--- The 0-based row and byte column of the first `needle` in `bufnr`, `delta` bytes in.
local function spot(bufnr, needle, delta)
  for row, text in ipairs(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)) do
    local byte = text:find(needle, 1, true)
    if byte then return row - 1, byte - 1 + (delta or 1) end
  end
  error('not in the buffer: ' .. needle)
end

--- The lsp-memory semantic token at `needle` (a table with `type` and `modifiers`), or nil.
local function token_at(bufnr, needle)
  local row, col = spot(bufnr, needle)
  for _, token in ipairs(vim.lsp.semantic_tokens.get_at_pos(bufnr, row, col) or {}) do
    return token
  end
  return nil
end

local function main()
  local v = vim.version()
  out(('# nvim %d.%d.%d'):format(v.major, v.minor, v.patch))
  vim.cmd('filetype on')
  local plugin = require('lsp_memory')
  plugin.setup({ cmd = { env('LSP_MEMORY_NVIM_PYTHON'), '-m', 'lsp_memory', 'serve' } })

  vim.cmd('edit ' .. vim.fn.fnameescape(env('LSP_MEMORY_NVIM_DOC')))
  local doc = vim.api.nvim_get_current_buf()
  local client = plugin.client(doc)
  if not client then error('no client: nothing else can be checked') end
  check('initialized', wait_for(function() return client.initialized == true end))
  local provider = client.server_capabilities.semanticTokensProvider
  check('the server declares semantic tokens with the unresolved modifier',
    provider ~= nil and vim.tbl_contains(provider.legend.tokenModifiers, 'unresolved'), provider)

  -- Neovim asks for the tokens by itself once attached; the server asks it again
  -- (workspace/semanticTokens/refresh) when its first index sync ends.
  local superseded
  wait_for(function()
    superseded = token_at(doc, '@leaf_superseded_a004')
    return superseded ~= nil and superseded.modifiers.deprecated == true
  end)
  check('a superseded claim is a variable token marked deprecated',
    superseded ~= nil and superseded.type == 'variable' and superseded.modifiers.deprecated,
    superseded)
  local struck = vim.api.nvim_get_hl(0, { name = '@lsp.mod.deprecated', link = false })
  check("Neovim's highlight of the deprecated modifier strikes it through",
    struck.strikethrough == true, struck)
  local active = token_at(doc, '@leaf_active_a001')
  check('a live claim is a variable token, not deprecated',
    active ~= nil and active.type == 'variable' and not active.modifiers.deprecated, active)
  local context = token_at(doc, '@leaf_ctx')
  check('a context is a namespace token', context ~= nil and context.type == 'namespace', context)
  local missing = token_at(doc, '[[Missing Target]]')
  check('a link to no note is a string token marked unresolved',
    missing ~= nil and missing.type == 'string' and missing.modifiers.unresolved, missing)

  -- Reference counts on alice.md: "# Alice" (line 9) is linked twice, "## Working Style"
  -- (line 13) once; the lens is refreshed on request, as a user's autocmd would.
  vim.cmd('edit ' .. vim.fn.fnameescape(env('LSP_MEMORY_NVIM_ALICE')))
  local alice = vim.api.nvim_get_current_buf()
  check('alice.md is attached', wait_for(function()
    return vim.lsp.buf_is_attached(alice, client.id)
  end))
  local titles = {}
  wait_for(function()
    vim.lsp.codelens.refresh({ bufnr = alice })
    vim.wait(200)
    titles = {}
    for _, lens in ipairs(vim.lsp.codelens.get(alice)) do
      if lens.command and lens.command.command == 'lspMemory.showReferences' then
        titles[lens.range.start.line] = lens.command.title
      end
    end
    return titles[8] ~= nil
  end)
  check('the title shows how many links name the note', titles[8] == '2 references', titles)
  check('a linked heading shows its own count', titles[12] == '1 reference', titles)

  -- Running the title's lens (cursor on its line) lists the two links in the quickfix list.
  vim.api.nvim_win_set_cursor(0, { 9, 0 })
  vim.fn.setqflist({}, 'r', { items = {} })
  vim.lsp.codelens.run()
  local items = {}
  wait_for(function()
    items = vim.fn.getqflist()
    return #items == 2
  end)
  local names = {}
  for _, item in ipairs(items) do
    table.insert(names, vim.fn.fnamemodify(vim.api.nvim_buf_get_name(item.bufnr), ':t'))
  end
  table.sort(names)
  check("running the title's lens puts its links in the quickfix list",
    vim.deep_equal(names, { 'deep-note.md', 'project-plan.md' }), names)

  client.stop()
end

local ok, err = pcall(main)
if not ok then
  check('script error', false, tostring(err))
end
vim.cmd((checks.failures == 0) and 'qa!' or 'cq 1')
