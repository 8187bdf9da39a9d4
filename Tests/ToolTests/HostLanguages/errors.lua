-- Errors from Lua: each failed call returns nil, the message and the status name.
-- Usage: lua5.4 errors.lua LIBRARY NOT_AN_IMAGE MISSING BAD_LIBRARY
local pl = require "photoledger"
local library_path, not_image, missing, bad = arg[1], arg[2], arg[3], arg[4]

local lib = assert(pl.open(library_path, { device = "lua-host" }))
local function show(step, value, message, status)
    print(step .. " " .. tostring(value) .. " " .. tostring(status) .. " " .. tostring(message))
end
show("not-an-image", lib:save_to_album(not_image, "Trip", { move = true }))
show("missing", lib:save_to_album(missing, "Trip"))
show("bad-library", pl.open(bad))
show("unknown-album", lib:rename_album("00000000-0000-0000-0000-000000000000/L0/040", "x"))
-- The same failure through a callback.
assert(lib:save_to_album(missing, "Trip", function(ok, id, err, status) show("callback", ok, err, status) end))
lib:wait()
lib:close()
local ok, closed = pcall(lib.albums_json, lib)
print("after-close " .. tostring(ok) .. " " .. tostring(closed))
