import Foundation

/// The web view's page, style sheet and script: small, hand-written, served from the binary (no
/// network, no CDN). The page is one document; the script draws each view from the JSON routes,
/// follows the address's fragment (`#/album/…`), and redraws when the live stream says the
/// library changed.
enum WebPage {
    /// The document every view starts from; it carries the session's CSRF token.
    static func document(csrfToken: String) -> String {
        """
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <meta name="csrf-token" content="\(csrfToken)">
        <title>PhotoLedger</title>
        <link rel="stylesheet" href="/app.css">
        <script src="/app.js" defer></script>
        </head>
        <body data-view="loading">
        <a class="skip" href="#main">Skip to content</a>
        <header>
        <nav aria-label="Library">
        <a href="#/">Albums</a>
        <a href="#/status">Sync status</a>
        <a href="#/quarantine">Quarantine</a>
        <button type="button" id="logout">Log out</button>
        </nav>
        <span id="live" role="status" aria-live="polite"></span>
        </header>
        <div id="message" role="alert" hidden></div>
        <main id="main" tabindex="-1"><p>Loading…</p></main>
        </body>
        </html>
        """
    }

    /// The login page: the password form when there is a password, else how to get a session.
    static func logIn(message: String?, password: Bool) -> String {
        let notice = message.map { "<p role=\"alert\">\(escape($0))</p>" } ?? ""
        let body =
            password
            ? """
            <form method="post" action="/login">
            <label for="password">Password</label>
            <input id="password" name="password" type="password" autocomplete="current-password" required autofocus>
            <button type="submit">Log in</button>
            </form>
            """
            : "<p>Open the address that <code>photoledger web</code> printed when it started: it carries the token that opens a session.</p>"
        return """
            <!doctype html>
            <html lang="en">
            <head><meta charset="utf-8"><title>PhotoLedger — log in</title><link rel="stylesheet" href="/app.css"></head>
            <body data-view="login"><main id="main"><h1>PhotoLedger</h1>\(notice)\(body)</main></body>
            </html>
            """
    }

    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(
            of: ">", with: "&gt;"
        )
        .replacingOccurrences(of: "\"", with: "&quot;")
    }

    static let styles = #"""
        :root { color-scheme: light dark; --accent: #0a64d8; font-family: system-ui, sans-serif; }
        body { margin: 0; }
        header { display: flex; gap: 1rem; align-items: center; padding: .5rem 1rem; border-bottom: 1px solid #8884; }
        nav a { margin-right: 1rem; }
        main { padding: 1rem; }
        .skip { position: absolute; left: -10000px; }
        .skip:focus { left: 1rem; top: 1rem; background: Canvas; padding: .5rem; }
        a:focus-visible, button:focus-visible, input:focus-visible, select:focus-visible, li:focus-visible { outline: 3px solid var(--accent); outline-offset: 2px; }
        #message { margin: .5rem 1rem; padding: .5rem; border: 1px solid #c00; }
        #live { font-size: .85rem; opacity: .7; }
        .grid { list-style: none; padding: 0; display: grid; grid-template-columns: repeat(auto-fill, minmax(160px, 1fr)); gap: 8px; }
        .grid li { position: relative; }
        .grid img { width: 100%; aspect-ratio: 1; object-fit: cover; display: block; background: #8882; }
        .grid a { display: block; color: inherit; text-decoration: none; }
        .grid.editable li { touch-action: none; cursor: grab; user-select: none; }
        .grid li.dragging { opacity: .4; }
        .grid li.drop-target { outline: 3px dashed var(--accent); }
        .badges { position: absolute; top: 4px; right: 6px; text-shadow: 0 0 3px #000; color: #fff; }
        .card .count { opacity: .7; font-size: .9rem; }
        .placeholder { width: 100%; aspect-ratio: 1; background: #8882; display: flex; align-items: center; justify-content: center; }
        .viewer img, .viewer video { max-width: 100%; max-height: 70vh; }
        dl { display: grid; grid-template-columns: max-content auto; gap: .25rem 1rem; }
        dt { font-weight: 600; }
        .timeline { list-style: none; padding: 0; border-left: 3px solid #8886; }
        .timeline > li { margin: 0 0 1rem 0; padding-left: 1rem; }
        .timeline .overruled { text-decoration: line-through; }
        .outcome { font-size: .8rem; padding: 0 .3rem; border: 1px solid #8888; border-radius: 3px; }
        .outcome.overruled { border-color: #c00; }
        table { border-collapse: collapse; } td, th { border: 1px solid #8886; padding: .25rem .5rem; text-align: left; }
        button { margin: .2rem .3rem .2rem 0; }
        """#

    static let script = #"""
        'use strict';
        const csrf = document.querySelector('meta[name="csrf-token"]').content;
        const main = document.getElementById('main');
        const live = document.getElementById('live');
        const message = document.getElementById('message');
        let currentAlbum = null;   // the asset identifiers of the album shown last, for ← / → on an asset
        let drawing = 0;

        function el(tag, attributes, ...children) {
          const node = document.createElement(tag);
          for (const [key, value] of Object.entries(attributes || {})) {
            if (value === null || value === undefined || value === false) continue;
            if (key.startsWith('on')) node.addEventListener(key.slice(2), value);
            else if (key === 'dataset') Object.assign(node.dataset, value);
            else node.setAttribute(key, value === true ? '' : value);
          }
          for (const child of children.flat(Infinity)) {
            if (child === null || child === undefined || child === false) continue;
            node.append(child instanceof Node ? child : document.createTextNode(String(child)));
          }
          return node;
        }

        async function getJSON(path) {
          const response = await fetch(path, { headers: { 'Accept': 'application/json' } });
          const body = await response.json();
          if (response.status === 401 && body.error && body.error.code === 'sessionExpired') location.href = '/login?expired=1';
          if (!response.ok) throw new Error(body.error ? body.error.message : response.statusText);
          return body;
        }

        async function logOut() {
          const response = await fetch('/logout', { method: 'POST', headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': csrf }, body: '{}' });
          if (response.ok || response.status === 401) location.href = '/login';
          else showError('Logging out failed (' + response.status + '); try again.');
        }

        async function change(path, body) {
          const response = await fetch(path, {
            method: 'POST', headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': csrf }, body: JSON.stringify(body)
          });
          const answer = await response.json();
          if (!response.ok) { showError(answer.error ? answer.error.message : response.statusText); return null; }
          message.hidden = true;
          await draw();
          return answer;
        }

        function showError(text) { message.textContent = text; message.hidden = false; }

        // A thumbnail is loaded when it comes near the window, except those of the first screen
        // (eager), which are asked for first, as soon as the page has them.
        function thumbnail(asset, eager) {
          return el('img', { src: '/thumb/' + asset.id + '?size=256&v=' + asset.version, alt: asset.alt, loading: eager ? 'eager' : 'lazy',
                             fetchpriority: eager ? 'high' : null, decoding: 'async', draggable: 'false', width: 160, height: 160 });
        }

        function date(text) { return text ? text.replace('T', ' ').replace(/([+-]\d{4}|Z)$/, ' UTC') : 'no date'; }

        // MARK: Views

        async function albumsView() {
          const data = await getJSON('/api/albums');
          const card = album => el('li', { dataset: { id: album.id } },
            el('a', { href: '#/album/' + album.id, class: 'card', 'aria-label': album.title + ', ' + album.count + ' items' },
              album.cover ? thumbnail(album.cover) : el('div', { class: 'placeholder', role: 'img', 'aria-label': 'Empty album' }, '∅'),
              el('div', {}, album.title), el('div', { class: 'count' }, album.count + (album.count === 1 ? ' item' : ' items'))));
          const title = el('input', { id: 'new-album-title', required: true, 'aria-label': 'New album title', placeholder: 'New album' });
          const grid = (id, label, albums) => {
            const list = el('ul', { class: 'grid', id, 'aria-label': label }, albums.map(card));
            list.addEventListener('keydown', event => gridKey(event, list, { editable: false }));
            return list;
          };
          return [
            el('h1', {}, 'Albums'),
            el('h2', {}, 'Library'), grid('smart-albums', 'Library', data.smartAlbums),
            el('h2', {}, 'My albums'), grid('albums', 'My albums', data.albums),
            el('form', { onsubmit: async event => { event.preventDefault(); if (title.value.trim()) await change('/api/albums', { title: title.value }); } },
              title, el('button', { type: 'submit' }, 'Create album'))
          ];
        }

        // An album comes in pages: the first one small, so its first screen of thumbnails is asked
        // for at once; the others once that screen has loaded (see draw).
        const laterPage = 2000;
        function firstPage() { return Math.min(600, Math.max(60, 2 * Math.ceil(innerWidth / 150) * Math.ceil(innerHeight / 150))); }
        // About how many thumbnails the first screen shows (160-pixel cells, 8 pixels apart).
        function firstScreen() { return Math.max(1, Math.floor((innerWidth + 8) / 168)) * Math.ceil(innerHeight / 168); }

        function assetItem(asset, index) {
          return el('li', { dataset: { id: asset.id } },
            el('a', { href: '#/asset/' + asset.id, draggable: 'false' }, thumbnail(asset, index < firstScreen())),
            el('span', { class: 'badges', 'aria-hidden': 'true' }, (asset.favorite ? '♥' : '') + (asset.mediaType === 'video' ? ' ▶' : '')));
        }

        async function albumView(id) {
          const data = await getJSON('/api/albums/' + id + '?limit=' + firstPage());
          const album = data.album;
          currentAlbum = data.assets.map(asset => asset.id);
          const grid = el('ul', { class: 'grid' + (album.editable ? ' editable' : ''), id: 'assets', 'aria-label': album.title },
            data.assets.map((asset, index) => assetItem(asset, index)));
          grid.remaining = { id, offset: data.assets.length, count: data.count };
          grid.addEventListener('keydown', event => gridKey(event, grid, album));
          const parts = [el('h1', {}, album.title),
            el('p', {}, data.count + (data.count === 1 ? ' item' : ' items'),
              album.kind !== 'hidden' ? [' · ', el('a', { href: '#/history/' + album.id }, 'History')] : null)];
          if (album.editable) {
            enableDrag(grid, album);
            const title = el('input', { id: 'rename-title', value: album.title, 'aria-label': 'Album title', required: true });
            parts.push(el('form', { onsubmit: async event => { event.preventDefault(); await change('/api/albums/' + album.id + '/rename', { title: title.value }); } },
              title, el('button', { type: 'submit' }, 'Rename')),
              el('button', { type: 'button', onclick: async () => { if (await change('/api/albums/' + album.id + '/delete', {})) location.hash = '#/'; } }, 'Delete album'),
              el('p', { class: 'hint' }, 'Drag a photo to reorder, or focus it and press Alt+← or Alt+→.'));
          }
          parts.push(grid);
          return parts;
        }

        function gridKey(event, grid, album) {
          const items = [...grid.querySelectorAll('li[data-id]')];
          const index = items.findIndex(item => item.contains(document.activeElement));
          if (index < 0) return;
          const columns = Math.max(1, items.filter(item => item.offsetTop === items[0].offsetTop).length);
          const steps = { ArrowRight: 1, ArrowLeft: -1, ArrowDown: columns, ArrowUp: -columns, Home: -index, End: items.length - 1 - index };
          const step = steps[event.key];
          if (step === undefined) return;
          event.preventDefault();
          const target = Math.min(items.length - 1, Math.max(0, index + step));
          if (event.altKey && album.editable) {
            if (target !== index) move(album, items[index].dataset.id, target);
          } else {
            items[target].querySelector('a').focus();
          }
        }

        async function move(album, asset, to) {
          await change('/api/albums/' + album.id + '/move', { asset, to });
          const moved = main.querySelector('li[data-id="' + asset + '"] a');
          if (moved) moved.focus();
        }

        // Reordering by pointer (mouse, pen, touch): press on a photo, move over another, release.
        function enableDrag(grid, album) {
          let drag = null;
          let suppressClick = false;
          grid.addEventListener('pointerdown', event => {
            const item = event.target.closest('li[data-id]');
            if (!item || event.button !== 0) return;
            drag = { item, x: event.clientX, y: event.clientY, active: false, over: null };
          });
          grid.addEventListener('pointermove', event => {
            if (!drag) return;
            if (!drag.active && Math.hypot(event.clientX - drag.x, event.clientY - drag.y) > 6) {
              drag.active = true;
              drag.item.classList.add('dragging');
            }
            if (!drag.active) return;
            const hit = document.elementFromPoint(event.clientX, event.clientY);
            const over = hit ? hit.closest('#assets li[data-id]') : null;
            if (drag.over && drag.over !== over) drag.over.classList.remove('drop-target');
            drag.over = over && over !== drag.item ? over : null;
            if (drag.over) drag.over.classList.add('drop-target');
          });
          const finish = async event => {
            if (!drag) return;
            const { item, active, over } = drag;
            drag = null;
            item.classList.remove('dragging');
            if (over) over.classList.remove('drop-target');
            if (!active) return;
            suppressClick = true;
            if (event.type === 'pointerup' && over) {
              const items = [...grid.querySelectorAll('li[data-id]')];
              await move(album, item.dataset.id, items.indexOf(over));
            }
          };
          grid.addEventListener('pointerup', finish);
          grid.addEventListener('pointercancel', finish);
          grid.addEventListener('click', event => { if (suppressClick) { event.preventDefault(); suppressClick = false; } }, true);
        }

        async function assetView(id) {
          const [data, albums] = await Promise.all([getJSON('/api/assets/' + id), getJSON('/api/albums')]);
          const asset = data.asset;
          const media = asset.mediaType === 'video'
            ? el('video', { src: '/original/' + asset.id, controls: true, poster: '/image/' + asset.id + '?size=1024', 'aria-label': asset.alt })
            : el('img', { src: '/image/' + asset.id + '?size=1024&v=' + asset.version, alt: asset.alt });
          const toggle = (label, pressed, path, body) => el('button', { type: 'button', 'aria-pressed': String(pressed), onclick: () => change(path, body) }, label);
          const actions = el('div', { id: 'actions' },
            toggle(asset.favorite ? 'Unfavourite' : 'Favourite', asset.favorite, '/api/assets/favorite', { assets: [asset.id], value: !asset.favorite }),
            toggle(asset.hidden ? 'Unhide' : 'Hide', asset.hidden, '/api/assets/hide', { assets: [asset.id], value: !asset.hidden }),
            asset.deleted
              ? el('button', { type: 'button', onclick: () => change('/api/assets/recover', { assets: [asset.id] }) }, 'Recover')
              : el('button', { type: 'button', onclick: () => change('/api/assets/delete', { assets: [asset.id] }) }, 'Delete'));
          const select = el('select', { id: 'add-to-album', 'aria-label': 'Album to add to' },
            albums.albums.filter(album => !data.albums.some(member => member.id === album.id)).map(album => el('option', { value: album.id }, album.title)));
          const rows = [['Identifier', data.localIdentifier], ['Type', asset.mediaType], ['Size', asset.width + ' × ' + asset.height],
            ['Taken', date(asset.creationDate)], ['Added', date(data.addedDate)], ['Modified', date(data.modificationDate)],
            ['From device', data.sourceDevice], ['Favourite', asset.favorite ? 'yes' : 'no'], ['Hidden', asset.hidden ? 'yes' : 'no'],
            ['Deleted', asset.deleted ? 'yes, on ' + date(data.deletionDate) : 'no'], ['Edited', data.hasAdjustments ? 'yes' : 'no']];
          if (asset.mediaType === 'video') rows.push(['Duration', data.duration.toFixed(1) + ' s']);
          for (const resource of data.resources) rows.push(['File', resource.filename + ' (' + resource.uniformTypeIdentifier + ', ' + resource.size + ' bytes)']);
          const index = currentAlbum ? currentAlbum.indexOf(asset.id) : -1;
          return [
            el('h1', {}, asset.mediaType === 'video' ? 'Video' : 'Photo'),
            index >= 0 ? el('p', {}, el('span', {}, (index + 1) + ' of ' + currentAlbum.length + ' — ← and → go to the previous and next')) : null,
            el('div', { class: 'viewer' }, media), actions,
            el('dl', {}, rows.map(([name, value]) => [el('dt', {}, name), el('dd', {}, value)])),
            el('h2', {}, 'Place'),
            data.location
              ? el('p', {}, data.location.latitude.toFixed(5) + ', ' + data.location.longitude.toFixed(5) + ' — ',
                  el('a', { href: data.location.map, rel: 'noreferrer noopener', target: '_blank' }, 'Show on a map (OpenStreetMap)'))
              : el('p', {}, 'No location.'),
            el('h2', {}, 'Albums'),
            el('ul', { id: 'asset-albums' }, data.albums.map(album => el('li', {}, el('a', { href: '#/album/' + album.id }, album.title), ' ',
              el('button', { type: 'button', onclick: () => change('/api/albums/' + album.id + '/remove', { assets: [asset.id] }) }, 'Remove from ' + album.title)))),
            select.options.length ? el('p', {}, select, el('button', { type: 'button', onclick: () => change('/api/albums/' + select.value + '/add', { assets: [asset.id] }) }, 'Add to album')) : null,
            el('p', {}, el('a', { href: '#/history/' + asset.id, id: 'history-link' }, 'History of this ' + (asset.mediaType === 'video' ? 'video' : 'photo')))
          ];
        }

        async function historyView(id) {
          const data = await getJSON('/api/history/' + id);
          const value = text => text === null ? 'none' : '“' + text + '”';
          return [
            el('h1', {}, 'History of ' + data.object.title),
            el('p', {}, el('code', {}, data.object.localIdentifier)),
            el('ol', { class: 'timeline', id: 'timeline' }, data.entries.map(entry => el('li', { dataset: { type: entry.type } },
              el('div', {}, el('time', { datetime: entry.date }, date(entry.date)), ' · ', el('strong', {}, entry.device), ' · ', entry.type,
                entry.serverSequence === null ? ' · not yet synced' : ' · server #' + entry.serverSequence),
              el('ul', {}, entry.changes.map(change => el('li', { class: change.outcome, dataset: { field: change.field, outcome: change.outcome } },
                change.field + ': ' + value(change.oldValue) + ' → ' + value(change.newValue) + ' ',
                el('span', { class: 'outcome ' + change.outcome },
                  change.outcome === 'inEffect' ? 'in effect'
                  : change.outcome === 'replaced' ? 'replaced later by ' + (change.byDevice || change.by)
                  : 'overruled by a concurrent change from ' + (change.byDevice || change.by))))))))
          ];
        }

        async function statusView() {
          const data = await getJSON('/api/status');
          const rows = [['Library', data.library], ['Device', data.device], ['Assets', data.assets], ['Hidden', data.hidden],
            ['In Recently Deleted', data.deleted], ['Albums', data.albums], ['Events', data.events], ['Not yet synced', data.pendingEvents],
            ['Rejected by the server', data.rejectedEvents], ['Quarantined', data.quarantinedEvents],
            ['Remote', data.remote || 'none (set one with photoledger remote set)'], ['Last sync', data.lastSync ? date(data.lastSync) : 'never'],
            ['Log position', data.logPosition]];
          return [el('h1', {}, 'Sync status'), el('dl', { id: 'status' }, rows.map(([name, value]) => [el('dt', {}, name), el('dd', {}, String(value))]))];
        }

        async function quarantineView() {
          const entries = await getJSON('/api/quarantine');
          if (!entries.length) return [el('h1', {}, 'Quarantine'), el('p', {}, 'No event is quarantined.')];
          return [el('h1', {}, 'Quarantine'),
            el('p', {}, 'Events kept in the log but not applied, with why.'),
            el('table', { id: 'quarantine' }, el('thead', {}, el('tr', {}, ['Event', 'Device', 'Date', 'Type', 'Kind', 'Reason'].map(name => el('th', { scope: 'col' }, name)))),
              el('tbody', {}, entries.map(entry => el('tr', {}, [entry.eventId, entry.device, date(entry.date), entry.type, entry.kind, entry.reason].map(cell => el('td', {}, cell))))))];
        }

        // MARK: Drawing

        // Resolves once the thumbnails in the window have loaded (or failed), or after 3 s.
        function screenLoaded(grid) {
          const waiting = [...grid.querySelectorAll('img')].filter(img => {
            const box = img.getBoundingClientRect();
            return box.bottom > 0 && box.top < innerHeight && !img.complete;
          }).map(img => new Promise(resolve => { img.addEventListener('load', resolve, { once: true }); img.addEventListener('error', resolve, { once: true }); }));
          return Promise.race([Promise.all(waiting), new Promise(resolve => setTimeout(resolve, 3000))]);
        }

        const routes = [[/^#\/album\/([^/]+)$/, albumView], [/^#\/asset\/([^/]+)$/, assetView], [/^#\/history\/([^/]+)$/, historyView],
                        [/^#\/status$/, statusView], [/^#\/quarantine$/, quarantineView], [/^(#\/?)?$/, albumsView]];

        async function draw(moveFocus) {
          const hash = location.hash;
          const number = ++drawing;
          const [pattern, view] = routes.find(([pattern]) => pattern.test(hash)) || [null, null];
          const focused = document.activeElement ? document.activeElement.closest('[data-id]') : null;
          const focusedID = focused ? focused.dataset.id : null;
          const focusedKey = document.activeElement && document.activeElement.id ? document.activeElement.id : null;
          let content;
          try {
            content = view ? await view(...hash.match(pattern).slice(1)) : [el('h1', {}, 'Not found'), el('p', {}, el('a', { href: '#/' }, 'Albums'))];
          } catch (error) {
            content = [el('h1', {}, 'Cannot show this page'), el('p', {}, error.message), el('p', {}, el('a', { href: '#/' }, 'Back to the albums'))];
          }
          if (number !== drawing) return;
          const scroll = window.scrollY;
          main.replaceChildren(...content.flat().filter(Boolean));
          document.body.dataset.view = view ? view.name.replace('View', '') : 'notFound';
          const heading = main.querySelector('h1');
          document.title = (heading ? heading.textContent + ' — ' : '') + 'PhotoLedger';
          const grid = main.querySelector('#assets');
          if (grid && grid.remaining && grid.remaining.offset < grid.remaining.count) {
            // The rest of the album, once the thumbnails of the first screen have come (they go
            // first); a redraw further down the album needs the rest at once to scroll back.
            if (scroll === 0) await screenLoaded(grid);
            let { id, offset, count } = grid.remaining;
            while (offset < count) {
              let page;
              try { page = await getJSON('/api/albums/' + id + '?offset=' + offset + '&limit=' + laterPage); } catch (error) { showError(error.message); break; }
              if (number !== drawing) return;
              // An album changed between pages is drawn again by the live stream's notice.
              if (page.count !== count || page.assets.length === 0) break;
              grid.append(...page.assets.map(asset => assetItem(asset, Infinity)));
              currentAlbum.push(...page.assets.map(asset => asset.id));
              offset += page.assets.length;
            }
          }
          if (moveFocus) {
            main.focus();
            window.scrollTo(0, 0);
          } else {
            window.scrollTo(0, scroll);
            const again = (focusedID && main.querySelector('[data-id="' + focusedID + '"] a')) || (focusedKey && document.getElementById(focusedKey));
            if (again) again.focus();
          }
          document.body.dataset.drawn = String(number);
        }

        document.addEventListener('keydown', event => {
          if (document.body.dataset.view !== 'asset' || !currentAlbum || event.target.closest('input, select, textarea, video')) return;
          const index = currentAlbum.indexOf(location.hash.split('/')[2]);
          const next = event.key === 'ArrowRight' ? index + 1 : event.key === 'ArrowLeft' ? index - 1 : -1;
          if (index >= 0 && next >= 0 && next < currentAlbum.length) location.hash = '#/asset/' + currentAlbum[next];
        });

        window.addEventListener('hashchange', () => draw(true));

        function listen() {
          const events = new EventSource('/api/events');
          events.addEventListener('change', async event => {
            const change = JSON.parse(event.data);
            const hello = change.kind === 'hello';
            const reconnected = hello && document.body.dataset.position !== undefined;
            document.body.dataset.position = String(change.position);
            if (hello && !reconnected) return;
            await draw();
            if (!hello) live.textContent = 'Updated ' + new Date().toLocaleTimeString();
          });
          events.onerror = () => { live.textContent = 'Reconnecting…'; };
          events.onopen = () => { live.textContent = 'Live'; };
        }

        document.getElementById('logout').addEventListener('click', logOut);
        draw(false).then(listen);
        """#
}
