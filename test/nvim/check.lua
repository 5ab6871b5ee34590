-- Drives the tpu-ready language server from Neovim (0.7+) headless, as test/lsp.test.ts runs it:
--   TPU_READY_SERVER=dist/server.js TPU_READY_FILE=/abs/train.py TPU_READY_OUT=/tmp/out.txt \
--     nvim --headless -u NONE -c 'luafile test/nvim/check.lua'
-- Writes what it saw to TPU_READY_OUT: the diagnostics, the code actions, the buffer after the quick-fix,
-- and the diagnostics after an edit.
local server, file, out = os.getenv('TPU_READY_SERVER'), os.getenv('TPU_READY_FILE'), os.getenv('TPU_READY_OUT')
local lines = {}
local function log(s) table.insert(lines, s) end
local function finish()
  local f = io.open(out, 'w')
  f:write(table.concat(lines, '\n') .. '\n')
  f:close()
  vim.cmd('qa!')
end
vim.cmd('edit ' .. file)
local id = vim.lsp.start_client({
  name = 'tpu-ready',
  cmd = { 'node', server, '--stdio' },
  root_dir = vim.fn.fnamemodify(file, ':h'),
  -- Neovim 0.7 answers no workspace/configuration: settings go in initializationOptions
  init_options = { settings = { fixStyle = 'tpu-only' } },
})
vim.lsp.buf_attach_client(0, id)
if not vim.wait(30000, function() return #vim.diagnostic.get(0) > 0 end, 50) then
  log('no diagnostics')
  return finish()
end
for _, d in ipairs(vim.diagnostic.get(0)) do
  log(string.format('diagnostic %d:%d-%d:%d %s %s', d.lnum, d.col, d.end_lnum, d.end_col, d.user_data.lsp.code, d.source))
end
local d = vim.diagnostic.get(0)[1]
local params = {
  textDocument = { uri = vim.uri_from_bufnr(0) },
  range = { start = { line = d.lnum, character = d.col }, ['end'] = { line = d.end_lnum, character = d.end_col } },
  context = { diagnostics = vim.lsp.diagnostic.get_line_diagnostics(0, d.lnum) },
}
local fix
for _, r in pairs(vim.lsp.buf_request_sync(0, 'textDocument/codeAction', params, 10000) or {}) do
  for _, a in ipairs(r.result or {}) do
    log('action ' .. a.title)
    fix = fix or (a.edit and a)
  end
end
-- the quick-fix, applied by Neovim's own workspace-edit code
vim.lsp.util.apply_workspace_edit(fix.edit, 'utf-16')
for i, l in ipairs(vim.api.nvim_buf_get_lines(0, 0, -1, false)) do log(string.format('line %d %s', i, l)) end
-- after an edit, the diagnostics follow: the fixed line no longer has one
if vim.wait(30000, function()
  local ds = vim.diagnostic.get(0)
  return #ds == 1 and ds[1].user_data.lsp.code == 'TPU104'
end, 50) then
  log('after fix ' .. vim.diagnostic.get(0)[1].lnum .. ' TPU104')
else
  log('after fix: diagnostics did not follow')
end
vim.lsp.stop_client(id)
finish()
