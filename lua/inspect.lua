-- inspect: the state of one name, read in one atomic step. Changes nothing.
--
-- KEYS: 1 q, 2 w, 3 h, 4 g, 5 seq, 6 o, 7 ev   (see lib.lua)
-- ARGV: 1 limit   how many waiters to list, from the head (0 .. 100000)
-- Returns: {now_ms, permits, last_ticket, holder_count, waiter_count,
--           holders, waiters}
--   permits      the stored permit count (an inline holder's, when held
--                inline), or 0 if none (idle; a count left by keys that
--                expired at x is reported until the name's next call)
--   last_ticket  the fence counter (0 if never used)
--   holder_count ZCARD h (plus 1 for an inline holder), waiter_count ZCARD q
--                (expired entries included)
--   holders      flat array, 4 per holder (all of them): the inline holder,
--                then h's, earliest deadline first: member, fence, held_ms,
--                lease_left_ms
--                (held_ms -1 and fence 0 when the g field is unreadable;
--                the inline holder's come from o's value, member "?" if it
--                does not parse, and lease_left_ms from PTTL o)
--   waiters      flat array, 4 per listed waiter, in queue order:
--                member, ticket, waited_ms, liveness_left_ms
--                (liveness_left_ms: of the member's process, 0 when it has
--                no w entry)
--   A *_left_ms <= 0 marks an expired entry that no call has pruned yet.
--   Invalid stored values (tampered keys) read as 0; ms figures are clamped
--   to +-(2^31-1).
--   waited_ms comes from the ticket's arrival stamp (see lib.lua).
-- Errors: "FLBADARG <text>", "FLVERSION <version>: <text>"
local bad_keys = begin(KEYS, ARGV)  -- first, always (lib.lua)
if bad_keys then return bad_keys end
local limit, err = int_arg(1, 0, 100000, 'limit')
if not limit then return err end
local now = now_ms()
err = read_record(now, true)
if err then return err end
-- Tampered keys may hold any score: report them clamped, never as garbage.
local function ms(v)
  if not v or v ~= v then return 0 end
  return max(-MAX_MS, min(MAX_MS, v))
end
local function fence_or_0(v)
  if valid_fence(v) then return v end
  return 0
end

local holders = {}
local function add_holder(member, fence, since, deadline)
  holders[#holders + 1] = member
  holders[#holders + 1] = fence_or_0(tonumber(fence))
  holders[#holders + 1] = since and ms(now - tonumber(since)) or -1
  holders[#holders + 1] = ms((tonumber(deadline) or now) - now)
end
local o = inline_entry()
if o then add_holder(o.member or '?', o.fence, o.since, inline_deadline(now)) end  -- the inline holder
local h = redis.call('ZRANGE', H, '0', '-1', 'WITHSCORES')
for i = 1, #h, 2 do
  local v = redis.call('HGET', G, h[i]) or ''
  local fence, since = match(v, '^(%d+):(%d+)$')
  add_holder(h[i], fence, since, h[i + 1])
end

local waiters = {}
if limit > 0 then
  local q = redis.call('ZRANGE', Q, '0', format('%d', limit - 1), 'WITHSCORES')
  for i = 1, #q, 2 do
    local member, ticket = q[i], tonumber(q[i + 1])
    local deadline = stored_liveness(member) or now
    waiters[#waiters + 1] = member
    waiters[#waiters + 1] = fence_or_0(ticket)
    waiters[#waiters + 1] = valid_fence(ticket) and ms(max(0, now - floor(ticket / 1000))) or 0
    waiters[#waiters + 1] = ms(deadline - now)
  end
end

local permits = valid_permits(R.p) or (o and o.permits) or 0
return {now, permits, fence_or_0(tonumber(R.s)), redis.call('ZCARD', H) + (o and 1 or 0),
        redis.call('ZCARD', Q), holders, waiters}
