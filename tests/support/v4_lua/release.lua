-- release: give up a grant, by owner check, and hand the permit to the next
-- live waiter in the same step.
--
-- KEYS: 1 q, 2 w, 3 h, 4 g, 5 seq   (see lib.lua)
-- ARGV: 1 member    "<m><cid>:<token>"
--       2 permits   1 .. 1000000; caps the fill (see stored_permits in lib.lua)
-- Returns: 1 released; 0 the member held no live grant (never held, released
--          already, expired, or evicted): nothing is released on its behalf
--          (an expired entry still there is removed as expired).
-- Errors: "FLBADARG <text>", "FLVERSION <version>: <text>"
local bad_keys = begin(KEYS, ARGV)  -- first, always (lib.lua)
if bad_keys then return bad_keys end
local member, permits, err = member_and_permits()
if not member then return err end

local now = now_ms()
err = read_record(now)
if err then return err end
-- (An inline holder beside a live x is forged: inflate drops it, keeping
-- the queue's permit count, and the member is looked up in h.)
if R.o == member and not queue_by_x(now) then  -- Fast path: the uncontended holder, kept inline
  local live = inline_holder(now)
  drop_inline()
  if live then return 1 end
  return 0
end
inflate(now)
-- A grant past its deadline is not released, it was lost (holder_deadline
-- removes it).
local released = holder_deadline(member, now) and 1 or 0
prune_holders(now)
-- The permit is handed on before the holder leaves h (see fill).
fill(now, stored_permits(permits), released)
-- Nobody else holds or waits? (fill found q empty unless it filled every
-- permit, and then someone else holds.)
if released == 1 and cards[Q] == 0 and card(H) == 1 then
  drop_queue()
  return 1
end
if released == 1 then drop_holder(member) end
cleanup(now, nil)
return released
