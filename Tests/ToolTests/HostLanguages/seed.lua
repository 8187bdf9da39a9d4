-- The seed flow from Lua: save a photo first into an album, blocking, then with a callback that
-- runs on this state's thread from lib:wait(), moving the temporary file.
-- Usage: lua5.4 seed.lua LIBRARY PHOTO TEMP_PHOTO THUMBNAIL
local pl = require "photoledger"
local library_path, photo, temp = arg[1], arg[2], arg[3]

local lib = assert(pl.open(library_path, { device = "lua-host" }))
local first = assert(lib:save_to_album(photo, "Trip"))
print("saved " .. first)

local called, received = false, nil
assert(lib:save_to_album(temp, "Trip", function(ok, id, err)
    called = true
    received = ok and id or ("failed: " .. tostring(err))
end, { move = true }))
-- The callback never runs on another thread: only inside wait() or poll().
print("before wait " .. tostring(called))
print("waited " .. lib:wait())
print("callback " .. tostring(called) .. " " .. received)
print("pending " .. lib:pending())

-- A callback inside a blocking call.
local inside
assert(lib:save_to_album(photo, nil, function(ok, id) inside = ok and id end, { blocking = true }))
print("blocking " .. tostring(inside ~= nil))
print("albums " .. assert(lib:albums_json()))

-- A thumbnail whose callback the script collects with poll(), doing its own work meanwhile.
local thumbnail
assert(lib:thumbnail(first, 64, arg[4], "fill", function(ok, json, err) thumbnail = ok and json or err end))
local polls = 0
while thumbnail == nil do
    lib:poll()
    polls = polls + 1
end
print("thumbnail " .. thumbnail)
lib:close()
print("closed " .. tostring(lib))
