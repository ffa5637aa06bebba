-- cancel: leave the queue (timeout, cancellation).
--
-- KEYS: 1 q, 2 w, 3 h, 4 g, 5 seq, 6 o, 7 ev   (see lib.lua)
-- ARGV: 1 member    "<m><cid>:<token>:<lease_ms>" (or without the lease: lib.lua)
--       2 permits   1 .. 1000000; caps the fill (see stored_permits in lib.lua)
-- Returns: {1}        the member was in the queue (even past its liveness
--                     deadline) and was removed from it
--          {2, fence, remaining}
--                     the member already holds a grant (handed off while it
--                     was giving up); it keeps it until it releases it or
--                     remaining ms (from this call's TIME, >= 1) pass
--          {0}        the member was neither waiting nor a live holder (an
--                     inline grant whose o has no valid expiry, tampered,
--                     cannot prove its grant either)
-- Errors: "FLBADARG <text>", "FLVERSION <version>: <text>"
local bad_keys = begin(KEYS, ARGV)  -- first, always (lib.lua)
if bad_keys then return bad_keys end
local member, permits, err = member_and_permits()
if not member then return err end

local now = now_ms()
err = read_record(now)
if err then return err end
if not has_queue(now) then  -- Fast path: nobody waits; the member holds inline, or nothing
  local owner, fence = inline_holder()
  local deadline = owner == member and inline_deadline(now)
  if deadline then return {2, fence, remaining(deadline, now)} end
  return {0}
end
local result
-- (w is its process's: it stays while the process lives.)
if zrem(Q, member) == 1 then result = {1} end
prune(now)
fill(now, stored_permits(permits))
if not result then
  local fence, deadline = holder_fence(member, now)
  if fence then
    result = {2, fence, remaining(deadline, now)}
  else
    result = {0}
  end
end
cleanup(now, nil)
return result
