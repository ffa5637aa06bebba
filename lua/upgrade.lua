-- upgrade: read a name's record, and take over a name an older protocol
-- version kept (read_record).
--
-- Part of the prelude: the build joins lib.lua, a newline, then this file,
-- and prepends that to every operation script (docs/PROTOCOL.md §4). It uses
-- lib.lua's keys and helpers; lib.lua does not use it. Which versions are
-- taken over, and why, is docs/PROTOCOL.md §10's version rule:
-- - Versions 5 to 7 kept this version's layout (5 and 6 without ev, which a
--   name lacks until its first eviction; version 8 adds only the member
--   mode 's', which no older client sends): their names, busy or not, are
--   upgraded by "v" alone. Version 7 is the one before: a rolling upgrade
--   finds its queues live.
-- - Versions 1 to 4 kept other layouts (a STRING record, the permit count in
--   g, w by member, the inline holder in the record). Their queues expire a
--   few seconds after their last deadline (x) and only the record stays: an
--   idle name's record is taken over (its counter kept, so fences keep
--   increasing); a busy one is refused, FLVERSION, since moving its queue
--   would take code that no running client needs.

-- A record of version 1 to 4 (`old`; R as read_record read it) on an idle
-- name: none of q, w, h and g exists, and no inline holder of versions 2 to
-- 4 ("o" in the record) has a live deadline ("d"). Then the record becomes
-- version 8's, with its last ticket and nothing else (as an idle name
-- leaves it), unless `readonly` (inspect reads it so). Returns whether it
-- was idle.
local function take_over_idle(old, now, readonly)
  if redis.call('EXISTS', Q, W, H, G) > 0 then return false end
  if old ~= '1' then
    local f = redis.call('HMGET', SEQ, 'o', 'd')
    if f[1] and live_deadline(tonumber(f[2]), now) then return false end
  end
  R = {s = R.s}
  if readonly then return true end
  if old == '1' then
    redis.call('DEL', SEQ)
    if R.s then redis.call('HSET', SEQ, 's', R.s) end
  else
    redis.call('HDEL', SEQ, 'o', 'd', 't', 'p', 'x')
  end
  redis.call('HSET', SEQ, 'v', VERSION)
  return true
end

-- Reads the record into R; every script does this first (the read it needs
-- anyway checks the version). Returns an error reply on a version these
-- scripts do not take over (above); else nil, the name now version 8's
-- (unless `readonly`: inspect writes nothing).
local function read_record(now, readonly)
  local r = redis.pcall('HMGET', SEQ, 'v', 's', 'p', 'x')
  if r.err and not find(r.err, 'WRONGTYPE', 1, true) then return redis.error_reply(r.err) end
  if r.err then  -- version 1: a STRING counter
    local last = redis.call('TYPE', SEQ).ok == 'string' and redis.call('GET', SEQ) or nil
    r = {'1', valid_fence(tonumber(last)) and last or nil}
  end
  local old = r[1]
  R = {s = r[2], p = r[3], x = r[4]}
  if not old or old == VERSION then return nil end
  if old == '5' or old == '6' or old == '7' then
    if not readonly then redis.call('HSET', SEQ, 'v', VERSION) end
    return nil
  end
  local older = old == '1' or old == '2' or old == '3' or old == '4'
  if older and take_over_idle(old, now, readonly) then return nil end
  return fail('VERSION', old .. ': this name is kept by protocol version ' .. old ..
              ', these scripts speak version ' .. VERSION ..
              (older and ' and take over a version 1 to 4 name only when it is idle' or ''))
end
