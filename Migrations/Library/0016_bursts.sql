-- Bursts, as PhotoKit models them. A burst photo's identifier and whether the camera picked it
-- come with its creation and never change; whether the user picked it is a last-writer-wins
-- register like the favorite. The burst's representative (the photo fetches return for it) is
-- read from these columns at fetch time, never stored: the first photo of the burst not in
-- Recently Deleted by (user pick, camera pick, creation date, identifier).
ALTER TABLE assets ADD COLUMN burst_identifier TEXT;
ALTER TABLE assets ADD COLUMN burst_auto_pick INTEGER NOT NULL DEFAULT 0;
ALTER TABLE assets ADD COLUMN burst_user_pick INTEGER NOT NULL DEFAULT 0;
ALTER TABLE assets ADD COLUMN burst_user_pick_hlc INTEGER NOT NULL DEFAULT 0;
ALTER TABLE assets ADD COLUMN burst_user_pick_device TEXT NOT NULL DEFAULT '';
CREATE INDEX assets_by_burst ON assets (burst_identifier) WHERE burst_identifier IS NOT NULL;
