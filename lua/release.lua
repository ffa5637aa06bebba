-- release: give up a grant, by owner check, and hand the permit to the next
-- live waiter in the same step.
--
-- KEYS: 1 q, 2 w, 3 h, 4 g, 5 seq, 6 o, 7 ev   (see lib.lua)
-- ARGV: 1 member    "<m><cid>:<token>:<lease_ms>" (or without the lease: lib.lua)
--       2 permits   1 .. 1000000; caps the fill (see stored_permits in lib.lua)
--       3 "h"       optional: the caller queued before it was granted, so
--                   its grant is in h, not in o (a hint: o is then read only
--                   if the name has no queue structure; a wrong hint costs
--                   up to three commands, and gives the same answer unless
--                   the keys were tampered with)
-- Returns: 1 released; 0 the member held no live grant (never held, released
--          already, expired, or evicted): nothing is released on its behalf
--          (an expired entry still there is removed as expired).
-- Errors: "FLBADARG <text>", "FLVERSION <version>: <text>"
local bad_keys = begin(KEYS, ARGV)  -- first, always (lib.lua)
if bad_keys then return bad_keys end
local member, permits, err = member_and_permits()
if not member then return err end
local queued_before = ARGV[3] == 'h'
if ARGV[3] and not queued_before then return fail('BADARG', 'the third argument must be h, or none') end

-- Fast path: the uncontended holder, kept inline. o exists only under this
-- version, and only while the name has no queue structure (but by
-- tampering: then this releases what was forged), so neither the record
-- nor the time is needed. A caller that queued skips it: its grant is in h,
-- and o is not read on the contended path.
local function release_inline()
  if not inline_held_by(member) then return false end
  redis.call('DEL', O)
  return true
end
if not queued_before and release_inline() then return 1 end
local now = now_ms()
err = read_record(now)
if err then return err end
-- Without the queue structure the member holds o or nothing (o is
-- another's, or its grant expired with o).
if not has_queue(now) then return release_inline() and 1 or 0 end
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
