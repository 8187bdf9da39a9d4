-- An album's members in order, with their causal length, from the index alone: fetching an
-- album no longer looks up each member's row to learn whether it is still a member.
DROP INDEX album_members_in_order;
CREATE INDEX album_members_in_order ON album_members (album_id, position, asset_id, cl);
