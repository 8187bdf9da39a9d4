-- Album membership, favorite, hide, delete and recover from Lua, each read back from the
-- listings, and an unknown asset refused. Usage: lua5.4 api.lua LIBRARY PHOTO_1 PHOTO_2
local pl = require "photoledger"
local lib = assert(pl.open(arg[1], { device = "lua-host" }))
local a = assert(lib:save_to_album(arg[2]))
local b = assert(lib:save_to_album(arg[3]))
local album = assert(lib:create_album("Family"))

local function has(json, id) return json:find(id, 1, true) ~= nil end
local function count(json, text)
    local found, from = 0, 1
    while true do
        local at = json:find(text, from, true)
        if not at then return found end
        found, from = found + 1, at + #text
    end
end

assert(lib:add_to_album(album, { a, b }))
local members = assert(lib:assets_json(album))
print("added " .. tostring(has(members, a) and has(members, b)))
assert(lib:remove_from_album(album, b))
members = assert(lib:assets_json(album))
print("removed " .. tostring(has(members, a) and not has(members, b)))

assert(lib:set_favorite({ a }))
local favorites = assert(lib:assets_json(nil, { favorites = true }))
print("favorite " .. tostring(has(favorites, a) and not has(favorites, b)))
assert(lib:set_favorite(a, false))
print("unfavorite " .. tostring(not has(assert(lib:assets_json(nil, { favorites = true })), a)))

assert(lib:set_hidden(b))
print("hidden " .. count(assert(lib:assets_json()), '"isHidden":true'))
assert(lib:set_hidden({ b }, false))
print("shown " .. count(assert(lib:assets_json()), '"isHidden":true'))

assert(lib:delete_assets({ b }))
print("deleted " .. tostring(has(assert(lib:assets_json(nil, { deleted = true })), b)))
assert(lib:recover_assets(b))
print("recovered " .. tostring(not has(assert(lib:assets_json(nil, { deleted = true })), b)))

local ok, message, status = lib:set_hidden("00000000-0000-0000-0000-000000000000/L0/001")
print("unknown " .. tostring(ok) .. " " .. tostring(status) .. " " .. tostring(message))
lib:close()
