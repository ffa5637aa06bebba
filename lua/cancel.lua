-- cancel: leave the queue (timeout, cancellation).
--
-- KEYS: 1 q, 2 w, 3 h, 4 g, 5 seq   (see lib.lua)
-- ARGV: 1 member    "<m><cid>:<token>"
--       2 permits   integer >= 1 (used only if the name lost its stored value)
-- Returns: {1}        the waiter was removed from the queue
--          {2, fence} the member already holds a grant (handed off while it
--                     was giving up); it keeps it until it releases it
--          {0}        the member was neither waiting nor holding
-- Errors: "FLBADARG <text>"
local member, permits, err = member_and_permits()
if not member then return err end

local now = now_ms()
local result
if redis.call('ZREM', Q, member) == 1 then
  redis.call('ZREM', W, member)
  result = {1}
end
prune(now)
fill(now, stored_permits(permits))
if not result then
  local fence = holder_fence(member, now)
  if fence then
    result = {2, fence}
  else
    result = {0}
  end
end
cleanup(now, nil)
return result
