-- fairlock protocol, shared prelude.
--
-- With upgrade.lua after it (read_record), this file is the prelude the
-- build prepends to every operation script (acquire, release, cancel,
-- heartbeat, inspect, evict), so each script loaded by SCRIPT LOAD is
-- `lib.lua .. "\n" .. upgrade.lua .. "\n" .. op.lua`; and the prelude
-- heads the function library, where each op.lua is the body of one
-- function(KEYS, ARGV) (docs/PROTOCOL.md §4). A client in another language
-- must load the same texts.
--
-- Keys of one name N under prefix P (every key shares the hash tag {N}):
--   KEYS[1] P:{N}:q    ZSET  waiter member -> ticket (arrival order)
--   KEYS[2] P:{N}:w    ZSET  process "<m><cid>" -> liveness deadline (ms, Redis
--                            TIME) of that process's waiters on N: a waiter in q
--                            is live while its process's entry is (waiter_deadline)
--   KEYS[3] P:{N}:h    ZSET  holder member -> grant deadline (ms, Redis TIME)
--   KEYS[4] P:{N}:g    HASH  holder member -> "<fence>:<granted ms>"
--   KEYS[5] P:{N}:seq  HASH  the name's record (never deleted):
--     "v" protocol version (VERSION), "s" the last ticket issued; while the
--     name has a queue structure "p" its permit count and "x" the expiry
--     time set on q, w, h and g (see cleanup; if the keys expire at x, p
--     and x stay until the name's next call)
--   KEYS[6] P:{N}:o    STRING the uncontended holder, kept inline:
--     "<member> <fence> <permits> <granted ms>", expiring at its grant
--     deadline (PX). Its fence is the record's "s". It exists only while q,
--     h and g do not: the first call that needs them moves it into h and g
--     (inflate).
--   KEYS[7] P:{N}:ev   ZSET  evicted member -> until when (ms, Redis TIME) its
--                            eviction is remembered: the deadline its entry
--                            had (record_eviction). Its process's acquire and
--                            heartbeat then answer "evicted", not "gone", so
--                            it does not queue again. Expires at its last
--                            entry; outlives an idle name until then.
-- While a name is busy its keys expire some seconds after the last deadline
-- they hold; when it goes idle they are deleted.
-- Tickets (= fences) are max(last + 1, now_ms * 1000): strictly increasing,
-- and floor(ticket / 1000) is the arrival time in ms (exact unless more than
-- 1000 arrivals share a millisecond, the name is new or lost its record
-- (one ms ahead: ticket_after), or the server clock stepped back).
-- Members are "<m><cid>:<token>:<lease>": <m> is the wake mode of the owning
-- process ('p' PUBLISH, 's' SPUBLISH on a shard channel (version 8), 'k'
-- keyspace key, 'n' none), <cid> its client id,
-- <token> the participant's random token (96 bits from the C++ client), both
-- lower-case hex, and <lease> the wait's lease in ms (decimal, 1 .. 2^31-1,
-- no leading zero): a grant handed to the member inside another call lasts
-- no longer (fill). Version 5's form "<m><cid>:<token>", without a lease,
-- is still accepted.

-- Two habits keep a call cheap (measured with callgrind, in instructions
-- per grant): numbers go to redis.call as strings ('0', format('%d', n)),
-- since Redis turns a Lua number argument into text with snprintf("%.17g"),
-- several times the cost of an integer format (5 % of a grant); and the
-- standard functions are upvalues, not a global and a field looked up at
-- every use (3 to 4 %). A function library cannot read them while it loads,
-- so the first call binds them (begin).
local format, find, sub, match, floor, min, max, tonumber, ipairs, unpack, next

local Q, W, H, G, SEQ, O, EV  -- this call's keys (begin)
local ARGS = {}          -- this call's ARGV (begin)
local PRUNE_LIMIT = '100' -- expired entries removed per structure per call (a string: above)
local SKIP_LIMIT = 100    -- expired waiters skipped at the head per call
local fresh = {}         -- the keys (q, w, h) this call created: they need their expiry (cleanup;
                         -- g is created with h)
local moved_deadline = nil -- the deadline of a holder this call moved into h (inflate, cleanup)
local MAX_MS = 2147483647 -- the longest lease or liveness a caller may ask for
local MAX_FENCE = 9007199254740992 -- 2^53: tickets and fences are integers in [1, 2^53)
local VERSION = '8'       -- the protocol version this script set speaks (the record's "v")
local R = {}              -- the record as this call knows it (read_record, record_set): s, p, x
local inline_text = nil   -- o's value as this call read it (inline_value), false if none
local inline = nil        -- the same, parsed (inline_entry): a table, or false if none
local queue = nil         -- the name has its queue structure (has_queue; nil until asked)
local cards = {}          -- ZCARD of h and q as this call knows them (card, zadd, zrem)
local h_first = nil       -- h's earliest entry {member, deadline} as this call knows it ({} if
                          -- h is empty; nil until read, and again after any change of h)
local livenesses = nil    -- w's deadline per process as this call knows it (false: none);
                          -- made on first use (a table per call costs an uncontended call 1 %)

-- Starts a call: every operation script runs `begin(KEYS, ARGV)` first. It
-- takes the keys and arguments and resets every per-call value above, so
-- the same text also works as a function library (the values then outlive
-- a call). Returns an error reply unless there are 7 keys.
local function begin(keys, args)
  if #keys ~= 7 then
    return redis.error_reply('FLBADARG expected 7 keys (q w h g seq o ev), got ' .. #keys)
  end
  if not format then
    format, find, sub, match = string.format, string.find, string.sub, string.match
    floor, min, max, tonumber, ipairs, unpack = math.floor, math.min, math.max, _G.tonumber, _G.ipairs, _G.unpack
    next = _G.next
  end
  Q, W, H, G, SEQ, O, EV = keys[1], keys[2], keys[3], keys[4], keys[5], keys[6], keys[7]
  ARGS = args
  -- A table made per call costs an uncontended call about 1 %: fresh and
  -- cards are made again only if the last call filled them (the fast paths
  -- do not), and R not at all (read_record sets it, and every script reads
  -- the record before R).
  if next(fresh) ~= nil then fresh = {} end
  if next(cards) ~= nil then cards = {} end
  moved_deadline, h_first = nil, nil
  livenesses, inline_text, inline, queue = nil, nil, nil, nil
  return nil
end

-- Values read back from the keys are checked, not trusted: a key written by
-- anything else (an operator, a bug, a restore) must never turn into a
-- garbage fence, an entry that lives forever or an over-granted name.
local function valid_fence(v)
  return type(v) == 'number' and v == floor(v) and v >= 1 and v < MAX_FENCE
end

-- A deadline is live when it is ahead of now but no further than a caller
-- could have put it; a farther one (+inf, 1e300) is corrupt and counts as
-- expired, so nothing can block a queue forever.
local function live_deadline(d, now)
  return type(d) == 'number' and d > now and d <= now + MAX_MS
end

-- (TIME's two integers come as text: arithmetic converts each once,
-- tonumber twice.)
local function now_ms()
  local t = redis.call('TIME')
  return t[1] * 1000 + floor(t[2] / 1000)
end

local function fail(code, detail)
  return redis.error_reply('FL' .. code .. ' ' .. detail)
end

local function int_arg(i, lo, hi, what)
  local s = ARGS[i]
  -- Digits only, without leading zeros: tonumber alone would accept "1\0",
  -- "0x10", " 5" or "1e3", and the text can go on to Redis as it is (a
  -- lease as PX; Redis refuses "010"). (Then s + 0, not tonumber: it
  -- converts once, tonumber twice.)
  local v = s and #s <= 16 and (find(s, '^%-?[1-9]%d*$') or s == '0') and s + 0
  if not v or v < lo or v > hi then
    return nil, fail('BADARG', what .. ' must be an integer in [' .. lo .. ', ' .. hi .. ']')
  end
  return v
end

-- The lease a member read back from q names (the text after its second
-- colon), or nil. Two plain searches, not valid_member's patterns: this runs
-- once per grant (fill), on a member checked when it was queued
-- (member_arg); one written by anything else (tampered) can only shorten
-- its own handoff (a lease of at least 1 ms, taken as a cap).
local function member_lease(m)
  local first = find(m, ':', 1, true)
  local second = first and find(m, ':', first + 1, true)
  local lease = second and tonumber(sub(m, second + 1))
  if lease and lease >= 1 then return lease end
  return nil
end

-- A member as a caller may send it: 4 .. 128 bytes, "<m><cid>:<token>"
-- with or without ":<lease>", a lease being digits without a leading zero,
-- at most MAX_MS. (Up to 9 digits are never above it: one pattern without
-- a capture, the cheapest test of the usual case.)
local function valid_member(m)
  if #m < 4 or #m > 128 then return false end
  if find(m, '^[pkns][0-9a-f]+:[0-9a-f]+:[1-9]%d?%d?%d?%d?%d?%d?%d?%d?$')
     or find(m, '^[pkns][0-9a-f]+:[0-9a-f]+$') then
    return true
  end
  local lease = match(m, '^[pkns][0-9a-f]+:[0-9a-f]+:([1-9]%d%d%d%d%d%d%d%d%d)$')
  return lease ~= nil and lease + 0 <= MAX_MS
end

local function member_arg(i)
  local m = ARGS[i]
  if m == nil or not valid_member(m) then
    return nil, fail('BADARG', 'member must look like <p|k|n|s><hex>:<hex>[:<lease ms>]')
  end
  return m
end

-- ARGV 1 member, 2 permits: the arguments of release, cancel and evict.
-- Returns member, permits, or nil, nil, an error reply.
local function member_and_permits()
  local member, err = member_arg(1)
  if not member then return nil, nil, err end
  local permits
  permits, err = int_arg(2, 1, 1000000, 'permits')
  if not permits then return nil, nil, err end
  return member, permits
end

-- The process part of a member, "<m><cid>": the key of its liveness in w.
-- (A member read back from q without a colon, tampered, is its own.)
local function proc_of(member)
  local colon = find(member, ':', 1, true)
  if not colon then return member end
  return sub(member, 1, colon - 1)
end

-- Signal the process owning `member` that it was granted `fence`.
local function signal(member, fence)
  local proc = proc_of(member)
  local mode = sub(proc, 1, 1)
  local cid = sub(proc, 2)
  local base = sub(Q, 1, -2)            -- "P:{N}:"
  if mode == 'p' then
    local brace = find(base, '{', 1, true)
    local prefix = sub(base, 1, brace - 1) -- "P:"
    redis.call('PUBLISH', prefix .. 'wake:' .. cid, member .. ' ' .. format('%d', fence))
  elseif mode == 's' then
    -- A shard channel in the name's slot (same hash tag), for Redis Cluster:
    -- SPUBLISH reaches the slot's own node (and its replicas), never the
    -- cluster bus, as PUBLISH would. Redis 7 refuses a shard channel of a
    -- slot the node does not serve, never this one.
    redis.call('SPUBLISH', base .. 'wake:' .. cid, member .. ' ' .. format('%d', fence))
  elseif mode == 'k' then
    -- The documented exception to "every key in KEYS": a per-(name, process)
    -- key in the same hash slot, whose keyspace channel the process watches.
    redis.call('SET', base .. 'wake:' .. cid, format('%d', fence), 'PX', '60000')
  end
end

-- The number of entries in a sorted set: read once per call, then kept
-- by zadd and zrem, through which this call makes every change to them.
local function card(key)
  local n = cards[key]
  if not n then
    n = redis.call('ZCARD', key)
    cards[key] = n
  end
  return n
end

-- ZADD of one member; returns 1 if it was new, 0 if its score changed.
-- The score goes as text, as Redis would print it: a fraction (only a
-- tampered deadline read back has one) keeps it.
local function zadd(key, score, member)
  local text = score == floor(score) and format('%d', score) or format('%.17g', score)
  local n = redis.call('ZADD', key, text, member)
  if cards[key] then cards[key] = cards[key] + n end
  if key == H then h_first = nil end
  if key == W then
    livenesses = livenesses or {}
    livenesses[member] = score
    -- A new process entry may have made w again (pruning can empty w while
    -- q still holds dead waiters): it needs its expiry (cleanup).
    if n == 1 then fresh[W] = true end
  end
  return n
end

-- ZREM of one or more members; returns how many were there.
local function zrem(key, ...)
  local n = redis.call('ZREM', key, ...)
  if cards[key] then cards[key] = cards[key] - n end
  if key == H then h_first = nil end
  if key == W then
    livenesses = livenesses or {}
    for _, proc in ipairs({...}) do livenesses[proc] = false end
  end
  return n
end

-- ZPOPMIN of q: its head, member and ticket, removed; nil if q is empty
-- (which this call then knows without a ZCARD).
local function pop_head()
  local head = redis.call('ZPOPMIN', Q)
  if #head == 0 then
    cards[Q] = 0
    return nil
  end
  if cards[Q] then cards[Q] = cards[Q] - 1 end
  return head[1], tonumber(head[2])
end

-- h's earliest entry: {member, deadline}, or {} if h is empty. Read once,
-- and again only after this call changed h (zadd, zrem).
local function first_holder()
  if not h_first then
    local e = redis.call('ZRANGE', H, '0', '0', 'WITHSCORES')
    h_first = #e == 0 and {} or {e[1], tonumber(e[2])}
  end
  return h_first
end

-- h holds no entry, as this call knows (its count, or its earliest entry)
-- or reads it.
local function h_empty()
  if not cards[H] and h_first then return h_first[1] == nil end
  return card(H) == 0
end

-- HSET of one field of the record, kept in R.
local function record_set(name, value)
  R[name] = value
  redis.call('HSET', SEQ, name, value)
end

-- Remove holders (one or more members) from h, with their records in g:
-- always exactly ZREM h, then HDEL g.
local function drop_holder(...)
  zrem(H, ...)
  redis.call('HDEL', G, ...)
end

-- The liveness deadline stored for the process of `member` (w), or false:
-- read once per process per call.
local function stored_liveness(member)
  local proc = proc_of(member)
  livenesses = livenesses or {}
  local d = livenesses[proc]
  if d == nil then
    d = tonumber(redis.call('ZSCORE', W, proc)) or false
    livenesses[proc] = d
  end
  return d
end

-- The liveness deadline of a waiter if its process is live, else nil.
local function waiter_deadline(member, now)
  local d = stored_liveness(member)
  if d and live_deadline(d, now) then return d end
  return nil
end

-- A queue entry that can be granted: its process is live and its ticket a
-- valid fence (a corrupt ticket would become a corrupt fence: such an entry
-- is dropped like a dead one, and its owner learns it is gone and queues
-- again). Returns its liveness deadline, or nil.
local function live_waiter(member, ticket, now)
  local d = waiter_deadline(member, now)
  if d and valid_fence(ticket) then return d end
  return nil
end

-- Members of a deadline set that are expired (deadline <= now); with
-- `deep`, also those with a corrupt deadline beyond now + MAX_MS.
local function dead_entries(key, now, deep)
  local x = redis.call('ZRANGEBYSCORE', key, '-inf', format('%d', now), 'LIMIT', '0', PRUNE_LIMIT)
  if deep then
    local far = redis.call('ZRANGEBYSCORE', key, '(' .. format('%d', now + MAX_MS), '+inf',
                           'LIMIT', '0', PRUNE_LIMIT)
    for _, m in ipairs(far) do x[#x + 1] = m end
  end
  return x
end

-- Remove expired holders wherever they stand, and with prune the expired
-- processes of w (bounded). A dead process's waiters stay in q until fill
-- or drop_dead_heads reaches them at the head, until a call of their own
-- process looks them up (acquire's retry, cancel, heartbeat), until evict
-- names them, or until the keys expire: no index finds them in q. Only heartbeat and evict pass `deep` (one more command
-- per structure, off the per-grant path): corrupt far deadlines are rare
-- and harmless until such an entry holds a permit (live_grant and
-- waiter_deadline treat it as expired), and every waiting process beats a
-- few times per liveness.
-- Without `deep`, h is searched only if its earliest deadline has passed:
-- that read serves acquire's reply as well (first_holder). acquire and
-- release prune only h (prune_holders): a dead process's w entry answers
-- "dead" as well as no entry, and the others remove it.
local function prune_holders(now, deep)
  local earliest = not deep and first_holder()[2]
  local hx = (deep or (earliest and earliest <= now)) and dead_entries(H, now, deep) or {}
  if #hx > 0 then drop_holder(unpack(hx)) end
end

local function prune(now, deep)
  prune_holders(now, deep)
  local wx = dead_entries(W, now, deep)
  if #wx > 0 then zrem(W, unpack(wx)) end
end

-- A permit count as stored, if it is one (an integer in 1 .. 1000000).
local function valid_permits(p)
  p = tonumber(p)
  if p and p == floor(p) and p >= 1 and p <= 1000000 then return p end
  return nil
end

-- How many permits a fill may grant: the stored count, but never more than
-- the caller's own (clients agree on it; a stored value raised behind their
-- backs must not over-grant), and the caller's when nothing valid is stored.
local function stored_permits(caller)
  local p = valid_permits(R.p)
  if p then return min(p, caller) end
  return caller
end

-- The deadline of a grant handed to a live waiter inside another call: its
-- process's liveness deadline `d`, but no later than now + the lease its
-- member names (a member without one: `d`, as in version 5). Its client
-- learns of the grant by a signal, or by its next acquire, cancel or
-- heartbeat, which renews it.
local function handoff_deadline(member, d, now)
  local lease = member_lease(member)
  if lease then return min(d, now + lease) end
  return d
end

-- Grant free permits to the head of the live queue, in ticket order.
-- A handed-off grant lasts until handoff_deadline; its next heartbeat (or
-- acquire) renews it to a full lease. `leaving` (0 or 1)
-- holders still in h count as gone: a release hands its permit on before
-- it leaves h, so h is not deleted and created again (and needs no new
-- expiry; cleanup).
local function fill(now, permits, leaving)
  leaving = leaving or 0
  -- A lock whose h has an entry (none leaving) has no free permit: h need
  -- not be counted.
  if permits == 1 and leaving == 0 and not cards[H] and h_first and h_first[1] then return end
  local held = card(H) - leaving
  local skipped = 0
  while held < permits and skipped < SKIP_LIMIT and cards[Q] ~= 0 do
    local member, ticket = pop_head()  -- no ZCARD first: an empty q answers nil
    if not member then break end
    local deadline = live_waiter(member, ticket, now)
    if deadline then
      if card(H) == 0 then fresh[H] = true end
      zadd(H, handoff_deadline(member, deadline, now), member)
      redis.call('HSET', G, member, format('%d:%d', ticket, now))
      held = held + 1
      signal(member, ticket)
    else
      skipped = skipped + 1
    end
  end
end

-- Dead waiters at the head of q leave even while no permit is free (fill
-- skips them only when one is), so the first live waiter learns that it is
-- next (position 0) and wakes when the holder's lease runs out. Bounded like
-- fill; heartbeat runs it before its fill, off the per-grant path.
local function drop_dead_heads(now)
  for _ = 1, SKIP_LIMIT do
    local e = redis.call('ZRANGE', Q, '0', '0', 'WITHSCORES')
    if #e == 0 then
      cards[Q] = 0
      return
    end
    if live_waiter(e[1], tonumber(e[2]), now) then return end
    zrem(Q, e[1])
  end
end

-- `d`, the member's grant deadline in h (or nil), if it is still ahead; an
-- entry past its deadline (not yet pruned: pruning is bounded) is removed
-- here and reported as absent, so it can never be revived.
local function live_or_drop(member, d, now)
  if not d then return nil end
  if live_deadline(tonumber(d), now) then return d end
  drop_holder(member)
  return nil
end

-- The member's grant deadline in h if live (live_or_drop).
local function live_grant(member, now)
  return live_or_drop(member, redis.call('ZSCORE', H, member), now)
end

-- As live_grant(member, now), from h's first two entries when the
-- member is one of them (a lock's holder always is): that read also tells
-- this call h's earliest entry and, with fewer than two, its size.
local function holder_deadline(member, now)
  local e = redis.call('ZRANGE', H, '0', '1', 'WITHSCORES')
  local n = #e / 2
  if n < 2 then cards[H] = n end
  h_first = n == 0 and {} or {e[1], tonumber(e[2])}
  if e[1] == member then return live_or_drop(member, h_first[2], now) end
  if e[3] == member then return live_or_drop(member, e[4], now) end
  if n < 2 then return nil end
  return live_grant(member, now)
end

-- The fence (a number) and grant deadline of a live holder, or nil. A
-- holder whose record is missing or corrupt is removed: it cannot prove its
-- grant.
local function holder_fence(member, now)
  local deadline = live_grant(member, now)
  if not deadline then return nil end
  local v = redis.call('HGET', G, member)
  local fence = v and tonumber(match(v, '^(%d+):%d+$'))
  if valid_fence(fence) then return fence, deadline + 0 end
  drop_holder(member)
  return nil
end

-- A holder's lease is renewed to now + lease, but never shortened: its
-- client may already count on the deadline it had (one an earlier reply
-- told it; a handoff grant of a member without a lease lasts to its
-- process's liveness deadline, which can be later), and a call sent before
-- it learned of the grant must not cut that short.
local function renew_grant(member, deadline, now, lease)
  local renewed = max(deadline, now + lease)
  zadd(H, renewed, member)
  return renewed
end

-- A grant's remaining time as a reply reports it: whole ms from now to its
-- live deadline, at least 1 (only a tampered fractional deadline is less
-- than 1 ms ahead).
local function remaining(deadline, now)
  return max(1, floor(deadline - now))
end

-- The ms until the earliest holder deadline (0 .. 2^31-1), -1 if no holder:
-- a waiter's `next` (acquire's queued reply, heartbeat's waiting entry).
local function next_expiry(now)
  local deadline = first_holder()[2]
  if not deadline then return -1 end
  return min(MAX_MS, max(0, floor(deadline - now)))
end

-- A new ticket: strictly above every earlier one, and an arrival stamp.
-- A counter that is not a valid fence (tampered) restarts above every
-- ticket stamped up to this millisecond. Computes it only (see next_ticket).
local function ticket_after(now)
  local last = tonumber(R.s)
  if not valid_fence(last) or last + 1 >= MAX_FENCE then last = (now + 1) * 1000 end
  return max(last + 1, now * 1000)
end

-- Issues a new ticket: stores it in the record as the last one, with the
-- name's `permits` unless that is false.
local function next_ticket(now, permits)
  local t = ticket_after(now)
  R.s = format('%d', t)
  if permits then
    R.p = format('%d', permits)
    redis.call('HSET', SEQ, 'v', VERSION, 's', R.s, 'p', R.p)
  else
    redis.call('HSET', SEQ, 'v', VERSION, 's', R.s)
  end
  return t
end

-- The record's x is still ahead: the queue structure (q, h or g) exists,
-- known without a read. cleanup sets x whenever the structure is made, the
-- keys expire at x, and x is deleted when the name goes idle (drop_queue) or
-- is granted inline (an x left behind by keys that expired with it).
local function queue_by_x(now)
  return live_deadline(tonumber(R.x), now)
end

-- The name has its queue structure: q, h or g exists. Without a live x
-- (lost, or passed with the keys) EXISTS decides. Asked before the call
-- changes anything, so the answer is kept for the call.
local function has_queue(now)
  if queue == nil then queue = queue_by_x(now) or redis.call('EXISTS', Q, H, G) > 0 end
  return queue
end

-- o's value, read once per call (false: no o).
local function inline_value()
  if inline_text == nil then inline_text = redis.call('GET', O) or false end
  return inline_text
end

-- o is held by `member`: its value begins "<member> ". A release needs no
-- more (parsing the value would cost its fast path a fifth).
local function inline_held_by(member)
  local v = inline_value()
  return v and sub(v, 1, #member + 1) == member .. ' '
end

-- o as stored: {member, fence, permits, since} (numbers but the member; a
-- part that does not parse, tampered, is nil), or false.
local function inline_entry()
  if inline == nil then
    local v = inline_value()
    inline = false
    if v then
      local m, f, p, t = match(v, '^(%S+) (%d+) (%d+) (%d+)$')
      if m and not valid_member(m) then m = nil end
      inline = {member = m, fence = tonumber(f), permits = valid_permits(p), since = tonumber(t)}
    end
  end
  return inline
end

-- The inline holder if it can prove its grant: member, fence, permits; nil
-- otherwise. (It is live: o expires at its deadline.)
local function inline_holder()
  local e = inline_entry()
  if e and e.member and valid_fence(e.fence) and e.permits then return e.member, e.fence, e.permits end
  return nil
end

-- The inline holder's grant deadline: now + o's PTTL, unless that is
-- beyond what a caller could have asked for (a key made to live forever, or
-- longer: tampered); nil then. Read once per call (kept in the entry).
local function inline_deadline(now)
  local e = inline_entry()
  if e and e.deadline ~= nil then return e.deadline or nil end
  local ttl = redis.call('PTTL', O)
  local d = ttl > 0 and ttl <= MAX_MS and now + ttl or false
  if e then e.deadline = d end
  return d or nil
end

-- An inline grant's deadline becomes now + lease, unless it is later
-- already (as renew_grant; o's expiry is the deadline). An o without an
-- expiry, or with one beyond what a caller could ask for (tampered), gets
-- one. (Not PEXPIREAT's GT option: it needs Redis 7, and renewing an
-- inline grant is off the per-grant path.) Returns the grant's remaining
-- ms after the renewal: max(PTTL, lease).
local function renew_inline(now, lease)
  local ttl = redis.call('PTTL', O)
  if ttl < lease or ttl > MAX_MS then
    redis.call('PEXPIREAT', O, format('%d', now + lease))
    return lease
  end
  return ttl
end

-- Grants `member` the name inline: o = "<member> <fence> <permits> <since>"
-- expiring in `ttl` ms (all four numbers as text).
local function grant_inline(member, fence, permits, since, ttl)
  redis.call('SET', O, member .. ' ' .. fence .. ' ' .. permits .. ' ' .. since, 'PX', ttl)
end

-- Contention begins: a live inline holder moves into h and g with its
-- fence, deadline and grant time, and its permit count into the record;
-- one that cannot prove its grant is dropped. acquire runs this before it
-- touches q, w, h or g (the other scripts find nothing to do without the
-- queue structure), so the two holder forms never meet. Beside the
-- structure o is never there but by tampering: it is not read then, no
-- grant counts it, and drop_queue deletes it when the name goes idle.
local function inflate(now)
  if has_queue(now) or not inline_entry() then return end
  local member, fence, permits = inline_holder()
  local deadline = member and inline_deadline(now)
  -- PTTL was read after now (TIME at the call's start): the moved grant
  -- must not end before o would have, so the time since then is added.
  if deadline then deadline = deadline + (now_ms() - now) end
  local since = inline.since
  if not (since and since <= now) then since = now end
  redis.call('DEL', O)
  inline_text, inline = false, false
  if not deadline then return end
  fresh[H] = true
  moved_deadline = deadline
  zadd(H, deadline, member)
  redis.call('HSET', G, member, format('%d:%d', fence, since))
  record_set('p', format('%d', permits))
end

-- The latest deadline in h and w, or now if none is later (a repair
-- of g's x: two reads, never on a healthy name's path).
local function last_deadline(now)
  local latest = now
  for _, key in ipairs({H, W}) do
    local e = redis.call('ZRANGE', key, '-1', '-1', 'WITHSCORES')
    local d = #e > 0 and tonumber(e[2])
    if d and d == d and d > latest then latest = d end
  end
  return latest
end

-- The name goes idle (q is empty, h is empty or about to be): h, g and w
-- go (and o: see inflate), with the record's permit count and x.
local function drop_queue()
  redis.call('DEL', H, G, W, O)
  if R.p or R.x then
    redis.call('HDEL', SEQ, 'p', 'x')
    R.p, R.x = nil, nil
  end
end

-- x covers the deadline t when it lies at least a second past t, and no
-- further than a caller could have put it.
local function x_covers(x, t, now)
  return x and x == x and t + 1000 <= x and x <= now + MAX_MS
end

-- When nobody holds or waits, drop everything but the counter (and the
-- record's permit count and x). Otherwise keep the keys expiring after
-- every deadline in them, so a name whose processes all crashed vanishes by
-- itself even if no script runs on it again: the record's field "x" is the
-- expiry time set on q, w, h and g. It is pushed (6 s past the deadline, on
-- all four keys) only when a deadline this call wrote, `horizon` (or the
-- deadline of a holder it moved into h), comes within a second of it; a key
-- this call created (`fresh`, declared at the top; g with h) gets the x that
-- stands. An x that is missing or garbage, or does not reach a second past
-- now (the record was lost), is set again from the latest deadline in h and
-- w, whatever this call wrote. With `deep` (heartbeat, evict: off the
-- per-grant path), w or g found without an expiry gets the x that stands:
-- deleted (tampered, evicted) while q or h still held entries, they are made
-- again by a later call that does not count as creating them. (q and h are
-- fresh whenever made again: q when joined empty, h when granted empty.)
local function cleanup(now, horizon, deep)
  if h_empty() and card(Q) == 0 then
    drop_queue()
    return
  end
  if moved_deadline then horizon = max(horizon or 0, moved_deadline) end
  local b = horizon or now
  local x = tonumber(R.x)
  local keys = {Q, W, H, G}
  if x_covers(x, b, now) then
    keys = {}
    for _, key in ipairs({Q, W, H, G}) do
      local made = fresh[key] or (key == G and fresh[H])
      local unsure = deep and (key == W or key == G)
      if made or (unsure and redis.call('PTTL', key) == -1) then keys[#keys + 1] = key end
    end
    if #keys == 0 then return end
  else
    if not x_covers(x, now, now) then b = max(b, last_deadline(now)) end
    x = min(b + 6000, now + MAX_MS)
    record_set('x', format('%d', x))
  end
  x = format('%d', x)
  for _, key in ipairs(keys) do redis.call('PEXPIREAT', key, x) end
end

-- An operator evicted `member` (evict), whose entry lasted until `deadline`
-- (a holder's grant deadline; a waiter's, its process's liveness
-- deadline): ev remembers it until then, so that its process, which calls
-- before then unless it is dead, learns that it was evicted (was_evicted)
-- instead of queueing again. An entry whose deadline had passed is not
-- remembered: its process counts as dead, and queues again if it comes
-- back, as after any expiry. Expired entries (and corrupt far ones) leave
-- ev here, bounded like prune, and ev expires with its last entry, so ev
-- holds at most the evictions of live entries.
local function record_eviction(member, deadline, now)
  local old = dead_entries(EV, now, true)
  if #old > 0 then zrem(EV, unpack(old)) end
  if not live_deadline(deadline, now) then return end
  zadd(EV, deadline, member)
  local last = redis.call('ZRANGE', EV, '-1', '-1', 'WITHSCORES')
  redis.call('PEXPIREAT', EV, format('%d', floor(min(tonumber(last[2]), now + MAX_MS)) + 1))
end

-- `member` is neither waiting nor holding, and was evicted (record_eviction)
-- no longer ago than its entry would have lasted. Read only by the calls of
-- a member found gone (acquire's re-ask, heartbeat), off the per-grant path.
local function was_evicted(member, now)
  return live_deadline(tonumber(redis.call('ZSCORE', EV, member)), now)
end
