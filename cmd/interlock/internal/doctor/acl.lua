#!lua flags=no-writes
-- doctor_acl: may the user running this script run each of the commands
-- described by ARGV? Nothing is run: redis.acl_check_cmd (Redis 7+) checks
-- the command, its keys and its channels against the user's ACL.
--
-- KEYS     none
-- ARGV     a list of commands, each as its argument count n followed by its
--          n arguments (the command name first)
-- Returns  one integer per command, in order: 1 allowed, 0 refused, -1 the
--          server does not know the command (or its arguments)
local res = {}
local i = 1
while i <= #ARGV do
  local n = tonumber(ARGV[i])
  local ok, allowed = pcall(redis.acl_check_cmd, unpack(ARGV, i + 1, i + n))
  if not ok then
    res[#res + 1] = -1
  elseif allowed then
    res[#res + 1] = 1
  else
    res[#res + 1] = 0
  end
  i = i + n + 1
end
return res
