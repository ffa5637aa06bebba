-- evict: the operator's way to remove a wedged holder or waiter by member.
-- The freed permit goes to the next live waiter in the same step, and the
-- member's eviction is remembered (ev) until its entry's deadline, so that
-- its process learns it was evicted instead of queueing again.
--
-- KEYS: 1 q, 2 w, 3 h, 4 g, 5 seq, 6 o, 7 ev   (see lib.lua)
-- ARGV: 1 member    "<m><cid>:<token>[:<lease_ms>]" as shown by inspect
--       2 permits   1 .. 1000000 (used only if no valid count is stored)
-- Returns: 1 a holder was removed; 2 a waiter was removed; 0 not found
--          (whatever the entry's deadline)
-- Errors: "FLBADARG <text>", "FLVERSION <version>: <text>"
local bad_keys = begin(KEYS, ARGV)  -- first, always (lib.lua)
if bad_keys then return bad_keys end
local member, permits, err = member_and_permits()
if not member then return err end

local now = now_ms()
err = read_record(now)
if err then return err end
-- The inline holder, even one forged beside the queue structure.
if inline_held_by(member) then
  local deadline = inline_deadline(now)
  redis.call('DEL', O)
  record_eviction(member, deadline, now)
  return 1
end
if not has_queue(now) then return 0 end
local result, deadline = 0, nil
-- Not drop_holder: g is touched only if h held the member (no extra
-- command for a miss). A waiter leaves q only: w is its process's, and its
-- deadline there is the waiter's.
local held = tonumber(redis.call('ZSCORE', H, member))
if held then
  zrem(H, member)
  redis.call('HDEL', G, member)
  result, deadline = 1, held
elseif zrem(Q, member) == 1 then
  result, deadline = 2, stored_liveness(member)
end
if result ~= 0 then record_eviction(member, deadline, now) end
prune(now, true)  -- deep: an operator call, off the hot path
fill(now, valid_permits(R.p) or permits)  -- the operator's call: as stored
cleanup(now, nil, true)
return result
