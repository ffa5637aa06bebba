-- acquire: join the queue (or take a free permit), or report the caller's state.
--
-- KEYS: 1 q, 2 w, 3 h, 4 g, 5 seq, 6 o, 7 ev   (see lib.lua)
-- ARGV: 1 member        "<m><cid>:<token>:<lease_ms>" (or version 5's
--                       "<m><cid>:<token>", without a lease: lib.lua)
--       2 permits       1 .. 1000000; must match the name's stored permits
--       3 lease_ms      lease of a grant made in this call (1 .. 2^31-1)
--       4 liveness_ms   waiter liveness if queued (1 .. 2^31-1)
--       5 mode          "q": queue if not granted now; "t": try, never
--                       queue (a member already queued just gets its state);
--                       "f": as "q", for a member never sent before (a
--                       fresh token's first call): its own entries are not
--                       looked up. A call that may have run (a lost reply)
--                       is retried with "q".
-- Returns:
--   {1, fence, remaining}         granted (now, earlier by handoff, or a retry
--                                 of a grant already held: same fence; the
--                                 deadline becomes now + lease_ms, or stays
--                                 if the grant already lasts longer);
--                                 remaining = ms from this call's TIME to
--                                 the grant's deadline (>= 1)
--   {0, ticket, position, next}   queued; position is 0-based in q (waiters
--                                 of a dead process count until they leave);
--                                 next = ms until the earliest holder deadline
--                                 (0 .. 2^31-1; -1 if no holder). The liveness
--                                 deadline of the member's process (w) becomes
--                                 now + liveness_ms.
--   {-1}                          mode "t" and no permit free, or others
--                                 queued (no barging); nothing stored
--   {-2}                          mode "q" only: the member neither holds nor
--                                 waits because an operator evicted it (ev,
--                                 lib.lua record_eviction); nothing stored:
--                                 it is not queued again
-- Errors: "FLBADARG <text>", "FLPERMITS <stored permits>",
--         "FLVERSION <version>: <text>"
local bad_keys = begin(KEYS, ARGV)  -- first, always (lib.lua)
if bad_keys then return bad_keys end
local member, err = member_arg(1)
if not member then return err end
local permits, lease, liveness
permits, err = int_arg(2, 1, 1000000, 'permits')
if not permits then return err end
lease, err = int_arg(3, 1, 2147483647, 'lease_ms')
if not lease then return err end
liveness, err = int_arg(4, 1, 2147483647, 'liveness_ms')
if not liveness then return err end
local mode = ARGV[5]
if mode ~= 'q' and mode ~= 't' and mode ~= 'f' then return fail('BADARG', 'mode must be f, q or t') end

local now = now_ms()
err = read_record(now)
if err then return err end
-- Fast path: the name is uncontended, its holder (if any) kept inline in o.
local fence
if not has_queue(now) then
  local owner, owner_fence, owner_permits = inline_holder()
  if not owner then  -- idle (or o unreadable, tampered: replaced): grant inline
    if mode == 'q' and was_evicted(member, now) then return {-2} end
    local t = ticket_after(now)
    local text = format('%d', t)
    redis.call('HSET', SEQ, 'v', VERSION, 's', text)
    grant_inline(member, text, ARGV[2], format('%d', now), ARGV[3])  -- (int_arg: canonical digits)
    -- A permit count and x left by keys that expired at x (no call ran
    -- since) must go: an inline holder never stands beside a live x (the
    -- structure's permits are its own).
    if R.p or R.x then redis.call('HDEL', SEQ, 'p', 'x') end
    return {1, t, lease}
  end
  if owner == member then  -- a retry of a grant held: same fence, renewed (never shortened)
    return {1, owner_fence, renew_inline(now, lease)}
  end
  -- Another holds; unless o's expiry is forged (inflate then drops it).
  if inline_deadline(now) then
    if owner_permits ~= permits then return fail('PERMITS', format('%d', owner_permits)) end
    if mode == 't' and permits == 1 then return {-1} end  -- no permit free
  end
end
inflate(now)
prune_holders(now)
-- What prune freed is handed on, and dead waiters at the head leave, before
-- the idle check: a name left with only expired entries is idle again.
fill(now, stored_permits(permits))
cleanup(now, nil)
local stored = R.p
local stored_count = stored and valid_permits(stored)
if stored and not stored_count then
  record_set('p', format('%d', permits))  -- garbage (tampered): repair
elseif stored_count and stored_count ~= permits then
  return fail('PERMITS', stored)
end

-- The caller's own state, unless it has none (mode "f").
if mode ~= 'f' then
  local deadline
  fence, deadline = holder_fence(member, now)
  if fence then
    local renewed = renew_grant(member, deadline, now, lease)
    cleanup(now, renewed)
    return {1, fence, remaining(renewed, now)}
  end
  local ticket = tonumber(redis.call('ZSCORE', Q, member))
  -- Its process's liveness ran out (it never revives this entry), or the
  -- ticket is corrupt (tampered): queue again below.
  if ticket and not live_waiter(member, ticket, now) then
    zrem(Q, member)
    ticket = nil
  end
  if ticket then
    zadd(W, now + liveness, proc_of(member))
    cleanup(now, now + liveness)
    return {0, ticket, redis.call('ZRANK', Q, member), next_expiry(now)}
  end
  -- Neither holding nor waiting: a re-ask of a member an operator evicted
  -- ends here (a fresh member, "f", cannot have been; a try never queued).
  if mode == 'q' and was_evicted(member, now) then
    cleanup(now, nil)
    return {-2}
  end
end

-- After fill(), a free permit with an empty queue means nobody live waits.
-- (If fill stopped at its skip bound, stale heads remain: still no barging.)
local queued = card(Q)
local free = queued == 0 and card(H) < permits
if mode == 't' and not free then
  cleanup(now, nil)
  return {-1}
end

local t = next_ticket(now, not stored and permits)  -- with the permits, unless stored
if free then
  if card(H) == 0 then fresh[H] = true end
  zadd(H, now + lease, member)
  redis.call('HSET', G, member, format('%d:%d', t, now))
  cleanup(now, now + lease)
  return {1, t, lease}
end
-- The new ticket is above every other: the member is last, unless it was
-- in q already (only a mode "f" call for a member that was sent before:
-- a misuse).
local position = zadd(Q, t, member) == 1 and queued or redis.call('ZRANK', Q, member)
zadd(W, now + liveness, proc_of(member))  -- the liveness of all its process's waiters here
if queued == 0 then fresh[Q] = true end  -- (w: zadd knows)
cleanup(now, now + liveness)
return {0, t, position, next_expiry(now)}
