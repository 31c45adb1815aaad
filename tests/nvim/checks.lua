-- What a headless Neovim check script prints and reads (lens_tokens.lua loads it with dofile):
-- one `PASS name` or `FAIL name detail` line per check, counting the failures.
local M = { failures = 0 }

function M.out(line)
  io.stdout:write(line .. '\n')
  io.stdout:flush()
end

function M.check(name, ok, detail)
  if ok then
    M.out('PASS ' .. name)
  else
    M.failures = M.failures + 1
    M.out('FAIL ' .. name .. ' ' .. vim.inspect(detail))
  end
end

--- An environment variable the test must set.
function M.env(name)
  local value = os.getenv(name)
  assert(value, name .. ' is not set')
  return value
end

return M
