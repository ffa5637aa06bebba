-- heartbeat: keep one process's waiters and holders of one name alive, in
-- one call, and tell the process what became of each of them.
--
-- KEYS: 1 q, 2 w, 3 h, 4 g, 5 seq, 6 o, 7 ev   (see lib.lua)
-- ARGV: 1 permits       1 .. 1000000; caps the fill (see stored_permits in lib.lua)
--       2 liveness_ms   1 .. 2^31-1; the process's new liveness deadline (w)
--       3 floor         optional (an odd number of arguments from 3 on):
--                       a ticket (1 .. 2^53-1), the latest one of the
--                       process's claims on the name learned before the
--                       process read the claims it sends; every member of
--                       the process queued at or below it that the call
--                       does not send is one the
--                       process no longer has (a leave that failed, or one
--                       a failover's lost writes undid) and is removed
--                       (drop_abandoned)
--       3.. (4..) pairs member, lease_ms (0 .. 2^31-1), zero or more pairs,
--                       all members of one process ("<m><cid>" alike): if
--                       one of them waits, the process's liveness deadline
--                       (w) becomes now + liveness_ms; a holding member's
--                       deadline becomes now + lease_ms, or stays if a grant
--                       already lasts longer (this is also how a
--                       handed-off grant becomes a full lease); lease_ms 0:
--                       a holder's check, its grant reported but not renewed
--                       (a member found waiting waits as with any lease)
-- Returns: a flat array, three entries per pair, in order:
--   1, position, next    still waiting, 0-based position in q; next = ms
--                        until the earliest holder deadline (0 .. 2^31-1;
--                        -1 if no holder), as acquire's
--   2, fence, remaining  holds a grant with this fence; remaining = ms from
--                        this call's TIME to its deadline (after any
--                        renewal), >= 1
--   0, 0, -1             gone: neither waiting nor holding (expired); an
--                        expired entry still there is removed (a waiter
--                        whose process's liveness ran out before this call,
--                        too; an inline grant whose o has no valid expiry,
--                        tampered, cannot prove its grant)
--   3, 0, -1             evicted: neither waiting nor holding because an
--                        operator evicted it (ev, lib.lua record_eviction)
-- Errors: "FLBADARG <text>", "FLVERSION <version>: <text>"
local bad_keys = begin(KEYS, ARGV)  -- first, always (lib.lua)
if bad_keys then return bad_keys end
local permits, err = int_arg(1, 1, 1000000, 'permits')
if not permits then return err end
local liveness
liveness, err = int_arg(2, 1, 2147483647, 'liveness_ms')
if not liveness then return err end
-- An odd count from 3 on: ARGV[3] is the floor, the pairs follow it.
local first = 3 + (#ARGV - 2) % 2
local floor_ticket = nil
if first == 4 then
  floor_ticket = int_arg(3, 1, MAX_FENCE - 1, 'floor')
  if not floor_ticket then return fail('BADARG', 'floor must be a ticket, an integer in [1, 2^53)') end
  if #ARGV < 5 then return fail('BADARG', 'member/lease pairs expected after the floor') end
end
-- Validate everything before changing anything.
local proc = ARGV[first] and proc_of(ARGV[first])
for i = first, #ARGV, 2 do
  local ok, bad = member_arg(i)
  if not ok then return bad end
  if proc_of(ok) ~= proc then return fail('BADARG', 'members of one process expected') end
  ok, bad = int_arg(i + 1, 0, 2147483647, 'lease_ms')
  if not ok then return bad end
end

local now = now_ms()
err = read_record(now)
if err then return err end
local out = {}
local function report(status, value, ms)
  out[#out + 1] = status
  out[#out + 1] = value
  out[#out + 1] = ms
end
-- A member neither waiting nor holding: evicted, or else gone.
local function report_absent(member)
  report(was_evicted(member, now) and 3 or 0, 0, -1)
end
-- The inline holder's remaining ms after its renewal (none for lease 0),
-- nil if o has no valid expiry and is not renewed.
local function inline_remaining(lease)
  if lease > 0 then return renew_inline(now, lease) end
  local deadline = inline_deadline(now)
  return deadline and remaining(deadline, now)
end
-- Fast path: no queue structure, so each member holds inline or is gone.
if not has_queue(now) then
  local owner, owner_fence = inline_holder()
  for i = first, #ARGV, 2 do
    local left = ARGV[i] == owner and inline_remaining(tonumber(ARGV[i + 1]))
    if left then
      report(2, owner_fence, left)
    else
      report_absent(ARGV[i])
    end
  end
  return out
end
prune(now, true)  -- deep: also entries with corrupt far deadlines
-- The process's members queued at or below the floor that it did not send:
-- it has no claim for them, yet its other waiters keep them live (w is per
-- process). Left there, one would be granted at the head and hold the
-- permit, unused, until min(its lease, the liveness) ran out. A member
-- queued after the process read its claims has a ticket above the floor
-- (tickets grow): it is never taken for one. The first SKIP_LIMIT entries
-- ahead are searched: the heartbeat comes again before such an entry
-- reaches the head from further back, unless the queue moves that fast.
local function drop_abandoned()
  local sent = {}
  for i = first, #ARGV, 2 do sent[ARGV[i]] = true end
  -- (The floor as sent: a number of 16 digits would go out as 14 significant ones.)
  local ahead = redis.call('ZRANGEBYSCORE', Q, '-inf', ARGV[3], 'LIMIT', '0', SKIP_LIMIT)
  local gone = {}
  for _, m in ipairs(ahead) do
    if not sent[m] and proc_of(m) == proc then gone[#gone + 1] = m end
  end
  if #gone > 0 then zrem(Q, unpack(gone)) end
end
if floor_ticket then drop_abandoned() end
-- Dead heads leave first: fill then reaches a live waiter behind up to 199
-- dead ones when a permit is free (the other way round, one that drop_dead_heads
-- brought to the head would wait, permit free, for the next call).
drop_dead_heads(now)
fill(now, stored_permits(permits))

local horizon = nil  -- the latest deadline written
-- The process's liveness as it stood before this call: once it ran out, its
-- waiters are gone for good (the process was declared dead).
local alive = proc and waiter_deadline(ARGV[first], now)
local waiting = false
for i = first, #ARGV, 2 do
  local member = ARGV[i]
  local rank = redis.call('ZRANK', Q, member)
  if rank and alive then
    waiting = true
    report(1, rank, next_expiry(now))
  else
    if rank then zrem(Q, member) end
    local fence, deadline = holder_fence(member, now)
    local lease = tonumber(ARGV[i + 1])
    if fence and lease > 0 then
      deadline = renew_grant(member, deadline, now, lease)
      horizon = max(horizon or 0, deadline)
    end
    if fence then
      report(2, fence, remaining(deadline, now))
    elseif rank then
      report(0, 0, -1)  -- its process's liveness ran out: gone
    else
      report_absent(member)
    end
  end
end
if waiting then  -- one w entry for all of them
  zadd(W, now + liveness, proc)
  horizon = max(horizon or 0, now + liveness)
end
cleanup(now, horizon, true)  -- deep: also a key found without its expiry
return out
