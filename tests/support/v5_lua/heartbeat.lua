-- heartbeat: keep one process's waiters and holders of one name alive, in
-- one call, and tell the process what became of each of them.
--
-- KEYS: 1 q, 2 w, 3 h, 4 g, 5 seq, 6 o   (see lib.lua)
-- ARGV: 1 permits       1 .. 1000000; caps the fill (see stored_permits in lib.lua)
--       2 liveness_ms   1 .. 2^31-1; the process's new liveness deadline (w)
--       3.. pairs       member, lease_ms (1 .. 2^31-1), zero or more pairs,
--                       all members of one process ("<m><cid>" alike): if
--                       one of them waits, the process's liveness deadline
--                       (w) becomes now + liveness_ms; a holding member's
--                       deadline becomes now + lease_ms, or stays if a grant
--                       already lasts longer (this is also how a
--                       handed-off grant becomes a full lease)
-- Returns: a flat array, two entries per pair, in order:
--   1, position   still waiting, 0-based position in q
--   2, fence      holds a grant with this fence (deadline renewed)
--   0, 0          gone: neither waiting nor holding (expired or evicted);
--                 an expired entry still there is removed (a waiter whose
--                 process's liveness ran out before this call, too)
-- Errors: "FLBADARG <text>", "FLVERSION <version>: <text>"
local bad_keys = begin(KEYS, ARGV)  -- first, always (lib.lua)
if bad_keys then return bad_keys end
local permits, err = int_arg(1, 1, 1000000, 'permits')
if not permits then return err end
local liveness
liveness, err = int_arg(2, 1, 2147483647, 'liveness_ms')
if not liveness then return err end
if (#ARGV - 2) % 2 ~= 0 then return fail('BADARG', 'member/lease pairs expected') end
-- Validate everything before changing anything.
local proc = ARGV[3] and proc_of(ARGV[3])
for i = 3, #ARGV, 2 do
  local ok, bad = member_arg(i)
  if not ok then return bad end
  if proc_of(ok) ~= proc then return fail('BADARG', 'members of one process expected') end
  ok, bad = int_arg(i + 1, 1, 2147483647, 'lease_ms')
  if not ok then return bad end
end

local now = now_ms()
err = read_record(now)
if err then return err end
local out = {}
local function report(status, value)
  out[#out + 1] = status
  out[#out + 1] = value
end
-- Fast path: no queue structure, so each member holds inline or is gone.
if not has_queue(now) then
  local owner, owner_fence = inline_holder()
  for i = 3, #ARGV, 2 do
    if ARGV[i] == owner then
      renew_inline(now, tonumber(ARGV[i + 1]))
      report(2, owner_fence)
    else
      report(0, 0)
    end
  end
  return out
end
prune(now, true)  -- deep: also entries with corrupt far deadlines
-- Dead heads leave first: fill then reaches a live waiter behind up to 199
-- dead ones when a permit is free (the other way round, one that drop_dead_heads
-- brought to the head would wait, permit free, for the next call).
drop_dead_heads(now)
fill(now, stored_permits(permits))

local horizon = nil  -- the latest deadline written
-- The process's liveness as it stood before this call: once it ran out, its
-- waiters are gone for good (the process was declared dead).
local alive = proc and waiter_deadline(ARGV[3], now)
local waiting = false
for i = 3, #ARGV, 2 do
  local member = ARGV[i]
  local rank = redis.call('ZRANK', Q, member)
  if rank and alive then
    waiting = true
    report(1, rank)
  else
    if rank then zrem(Q, member) end
    local fence, deadline = holder_fence(member, now)
    if fence then
      horizon = max(horizon or 0, renew_grant(member, deadline, now, tonumber(ARGV[i + 1])))
      report(2, fence)
    else
      report(0, 0)
    end
  end
end
if waiting then  -- one w entry for all of them
  zadd(W, now + liveness, proc)
  horizon = max(horizon or 0, now + liveness)
end
cleanup(now, horizon, true)  -- deep: also a key found without its expiry
return out
