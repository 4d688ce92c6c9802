// myco's own script: keyboard shortcuts, following the transcript, and the connection
// banner. Everything else is htmx. Nothing here uses eval or inline handlers, so the page's
// content policy (script-src 'self') holds.
(() => {
  "use strict";

  const $ = (sel) => document.querySelector(sel);

  // --- Approvals ------------------------------------------------------------------------
  // y allows the first waiting call once, a allows it always (the rule its button shows),
  // n puts the cursor in its deny reason (Enter there denies). While a call waits the
  // tab's title says so (the session's state), and a notification, when asked for (see
  // Notifications below).
  const firstCard = () => $(".approval-card");
  document.addEventListener("keydown", (ev) => {
    const t = ev.target;
    const typing = t instanceof HTMLElement && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName));
    const card = firstCard();
    if (!card || ev.ctrlKey || ev.metaKey || ev.altKey) return;
    if (typing) {
      if (ev.key === "Enter" && t instanceof HTMLInputElement && t.name === "reason" && card.contains(t)) {
        ev.preventDefault();
        card.querySelector('button[value="deny"]')?.click();
      }
      return;
    }
    const target = card.querySelector(`[data-key="${ev.key}"]`);
    if (!target) return;
    ev.preventDefault();
    if (target instanceof HTMLInputElement) target.focus();
    else target.click();
  });
  // --- Keyboard --------------------------------------------------------------------------

  document.addEventListener("keydown", (ev) => {
    const t = ev.target;
    const typing = t instanceof HTMLElement && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName));
    if ((ev.ctrlKey || ev.metaKey) && ev.key.toLowerCase() === "k") {
      const search = $("#search");
      if (search) {
        ev.preventDefault();
        search.focus();
        search.select();
      }
      return;
    }
    if (ev.key === "Escape") {
      const stop = $("#stop");
      if (stop) {
        ev.preventDefault();
        stop.click();
      }
      return;
    }
    if (ev.key === "/" && !typing) {
      const prompt = $("#prompt");
      if (prompt && !prompt.disabled) {
        ev.preventDefault();
        prompt.focus();
      }
      return;
    }
    if (t && t.id === "prompt" && ev.key === "ArrowUp" && !ev.shiftKey && !ev.altKey && !ev.ctrlKey && !ev.metaKey && t.value === "") {
      // ↑ in the empty composer brings back the last message sent, to send again or change.
      const last = lastSent();
      if (last) {
        ev.preventDefault();
        t.value = last;
        t.setSelectionRange(last.length, last.length);
      }
      return;
    }
    if (t && t.id === "prompt" && ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) {
      ev.preventDefault();
      const form = t.form;
      const files = $("#files");
      if (form && (t.value.trim() !== "" || (files && files.files.length))) form.requestSubmit();
    }
  });

  // lastSent is the text of the last message the person sent in this thread, "" for none.
  const lastSent = () => {
    const users = document.querySelectorAll("#messages .msg.user");
    const m = users[users.length - 1];
    if (!m) return "";
    const edit = m.querySelector("details.edit-message textarea");
    if (edit) return edit.defaultValue;
    const plain = m.querySelector(".plain");
    return plain ? plain.textContent : "";
  };

  // The boxes that edit a sent or queued message work as the composer does: Enter sends,
  // Shift+Enter breaks the line, and Esc closes the box (and stops nothing).
  document.addEventListener("keydown", (ev) => {
    const t = ev.target;
    if (!(t instanceof HTMLTextAreaElement)) return;
    const box = t.closest("details.edit-message, details.queued-edit");
    if (!box) return;
    if (ev.key === "Escape") {
      ev.preventDefault();
      ev.stopPropagation();
      box.open = false;
      box.querySelector("summary")?.focus();
    } else if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) {
      ev.preventDefault();
      ev.stopPropagation();
      if (t.value.trim() !== "") t.form?.requestSubmit();
    }
  }, true);

  // --- Following the transcript ----------------------------------------------------------

  // The page follows new output while the reader is at the bottom; once they scroll up it
  // stays put and offers a button back to the latest.
  // Only the reader starts following again, by going down to the end: a scroll that the
  // page's own change made (the page got shorter, and the browser moved up to its end) is no
  // sign that the reader wants the end, so it never turns following on.
  const nearBottom = () => window.innerHeight + window.scrollY >= document.documentElement.scrollHeight - 80;
  let follow = true;
  let lastY = window.scrollY;
  const latest = () => $("#to-latest");

  window.addEventListener("scroll", () => {
    const y = window.scrollY;
    if (!nearBottom()) follow = false;
    else if (y > lastY) follow = true;
    lastY = y;
    const b = latest();
    if (b) b.hidden = follow;
  }, { passive: true });

  const toBottom = () => window.scrollTo({ top: document.documentElement.scrollHeight });
  // The scroll event reaches the handler above only with the next frame: a change of the
  // page in between must not take back down a reader who has just moved up.
  const following = () => {
    if (follow && window.scrollY < lastY && !nearBottom()) {
      follow = false;
      const b = latest();
      if (b) b.hidden = false;
    }
    return follow;
  };

  document.addEventListener("click", (ev) => {
    if (ev.target instanceof Element && ev.target.id === "to-latest") {
      follow = true;
      ev.target.hidden = true;
      toBottom();
    }
  });

  const transcript = $("#transcript");
  if (transcript) {
    toBottom();
    new MutationObserver(() => {
      if (following()) toBottom();
    }).observe(transcript, { childList: true, subtree: true, characterData: true });
    // Messages get their real height late (content-visibility), and a height change is no
    // DOM mutation: follow sizes too.
    new ResizeObserver(() => {
      if (following()) toBottom();
    }).observe(transcript);
  }

  // After the composer is swapped in (a message was sent or refused), type on.
  document.addEventListener("htmx:after:swap", () => {
    const p = $("#prompt");
    if (p && document.activeElement === document.body) p.focus();
  });

  // --- A request that never reached the server ---------------------------------------------

  // When the server cannot be reached (it stopped, the tunnel is down), htmx gets no answer
  // at all: the page says so where the person looks. A message stays in the composer with
  // a note that it was not sent; any other action says it did not happen.
  document.addEventListener("htmx:error", (ev) => {
    const err = ev.detail && ev.detail.error;
    if (err && err.name === "AbortError") return;
    const elt = ev.target instanceof Element ? ev.target : null;
    const composer = elt && elt.closest("form.composer");
    const text = composer
      ? "Not sent: the server could not be reached (it may have stopped, or the connection is down). Your message is still here; send it again once the server is back."
      : "That did not happen: the server could not be reached (it may have stopped, or the connection is down). Try again once it is back.";
    const note = document.createElement("p");
    note.className = "banner error";
    note.setAttribute("role", "alert");
    note.textContent = text;
    if (composer) {
      note.id = "composer-error";
      composer.querySelector("#composer-error")?.remove();
      composer.prepend(note);
    } else {
      $("#toast")?.replaceChildren(note);
    }
  });

  // --- Copy ------------------------------------------------------------------------------

  // copyText puts text on the clipboard; where the Clipboard API is refused it falls back
  // to a selection and execCommand.
  const copyText = async (text) => {
    try {
      await navigator.clipboard.writeText(text);
      return true;
    } catch (e) {
      const ta = document.createElement("textarea");
      ta.value = text;
      ta.setAttribute("readonly", "");
      ta.className = "sr-only";
      document.body.append(ta);
      ta.select();
      const ok = document.execCommand("copy");
      ta.remove();
      return ok;
    }
  };
  const copied = (btn, ok) => {
    const label = btn.textContent;
    btn.textContent = ok ? "Copied" : "Copy failed";
    btn.classList.toggle("done", ok);
    setTimeout(() => {
      btn.textContent = label;
      btn.classList.remove("done");
    }, 1500);
  };

  // Every code block of rendered Markdown gets a Copy button of its own.
  const addCodeCopy = (root) => {
    for (const pre of root.querySelectorAll(".md pre")) {
      if (pre.closest("#live") || pre.parentElement.classList.contains("code")) continue;
      const wrap = document.createElement("div");
      wrap.className = "code";
      pre.replaceWith(wrap);
      const btn = document.createElement("button");
      btn.type = "button";
      btn.className = "copy-code";
      btn.textContent = "Copy";
      btn.setAttribute("aria-label", "Copy code");
      btn.title = "Copy this code";
      wrap.append(pre, btn);
    }
  };
  addCodeCopy(document);
  new MutationObserver((records) => {
    for (const r of records) for (const n of r.addedNodes) if (n instanceof Element) addCodeCopy(n.parentElement || n);
  }).observe(document.body, { childList: true, subtree: true });

  document.addEventListener("click", async (ev) => {
    const t = ev.target instanceof Element ? ev.target : null;
    if (!t) return;
    const msg = t.closest("button[data-copy-url]");
    if (msg) {
      try {
        const resp = await fetch(msg.dataset.copyUrl, { credentials: "same-origin" });
        copied(msg, resp.ok && (await copyText(await resp.text())));
      } catch (e) {
        copied(msg, false);
      }
      return;
    }
    const code = t.closest("button.copy-code");
    if (code) {
      // The source exactly: textContent, not innerText, which ends every highlighted line
      // (a block of its own) with a second newline; without the fence's last newline.
      const pre = code.parentElement.querySelector("pre");
      copied(code, !!pre && (await copyText(pre.textContent.replace(/\n$/, ""))));
    }
  });

  // --- Attachments ------------------------------------------------------------------------

  // The composer's files: the Attach button's input holds them, and pasting or dropping
  // files on the composer adds to it. Each shows as a chip with its name, size and a remove
  // button; the form posts them with the message.
  const fmtSize = (n) => (n < 1000 ? n + " B" : n < 1e6 ? (n / 1000).toFixed(1) + " KB" : (n / 1e6).toFixed(1) + " MB");
  const setFiles = (input, files) => {
    const dt = new DataTransfer();
    for (const f of files) dt.items.add(f);
    input.files = dt.files;
    showChips();
  };
  const showChips = () => {
    const input = $("#files");
    const chips = $("#chips");
    if (!input || !chips) return;
    chips.replaceChildren();
    [...input.files].forEach((f, i) => {
      const li = document.createElement("li");
      li.className = "chip";
      const name = document.createElement("span");
      name.textContent = f.name + " · " + fmtSize(f.size);
      const rm = document.createElement("button");
      rm.type = "button";
      rm.className = "link";
      rm.textContent = "×";
      rm.setAttribute("aria-label", "Remove " + f.name);
      rm.addEventListener("click", () => setFiles(input, [...input.files].filter((_, j) => j !== i)));
      li.append(name, rm);
      chips.append(li);
    });
  };
  const addFiles = (files) => {
    const input = $("#files");
    if (input && files.length) setFiles(input, [...input.files, ...files]);
  };
  document.addEventListener("change", (ev) => {
    if (ev.target instanceof Element && ev.target.id === "files") showChips();
  });
  document.addEventListener("paste", (ev) => {
    if (!(ev.target instanceof Element) || !ev.target.closest("form.composer")) return;
    const files = [...(ev.clipboardData?.files || [])];
    if (files.length) {
      ev.preventDefault(); // a pasted image is a file, not text
      addFiles(files);
    }
  });
  document.addEventListener("dragover", (ev) => {
    if (ev.target instanceof Element && ev.target.closest("form.composer") && ev.dataTransfer?.types.includes("Files")) {
      ev.preventDefault();
      ev.target.closest("form.composer").classList.add("dropping");
    }
  });
  document.addEventListener("dragleave", (ev) => {
    if (ev.target instanceof Element && ev.target.closest("form.composer")) ev.target.closest("form.composer").classList.remove("dropping");
  });
  document.addEventListener("drop", (ev) => {
    const composer = ev.target instanceof Element && ev.target.closest("form.composer");
    if (!composer || !ev.dataTransfer?.files.length) return;
    ev.preventDefault();
    composer.classList.remove("dropping");
    addFiles([...ev.dataTransfer.files]);
  });

  // --- New session ----------------------------------------------------------------------

  // A directory used lately, clicked, goes into the directory field; the message is next.
  document.addEventListener("click", (ev) => {
    const b = ev.target instanceof Element ? ev.target.closest("button[data-dir]") : null;
    const cwd = $("#cwd");
    if (!b || !cwd) return;
    cwd.value = b.dataset.dir;
    cwd.removeAttribute("aria-invalid");
    const p = $("#prompt");
    if (p) p.focus();
  });

  // --- Rename -----------------------------------------------------------------------------

  // Rename shows the title's form in place; Save posts it (htmx swaps the new title in),
  // Cancel and Esc put the heading back.
  const renaming = (on) => {
    const form = $("#rename-form");
    const title = $("#title");
    const button = $("#rename");
    if (!form || !title || !button) return;
    form.hidden = !on;
    title.hidden = on;
    button.hidden = on;
    button.setAttribute("aria-expanded", String(on));
    if (on) {
      const input = $("#rename-input");
      input.value = title.querySelector(".muted") ? "" : title.textContent.trim();
      input.focus();
      input.select();
    }
  };
  document.addEventListener("click", (ev) => {
    const t = ev.target instanceof Element ? ev.target : null;
    if (t && t.closest("#rename")) renaming(true);
    else if (t && t.closest("#rename-cancel")) renaming(false);
  });
  document.addEventListener("keydown", (ev) => {
    if (ev.key === "Escape" && ev.target instanceof Element && ev.target.id === "rename-input") {
      ev.stopPropagation();
      renaming(false);
    }
  }, true);
  // htmx fires after:swap on the element that made the request: the form.
  document.addEventListener("htmx:after:swap", (ev) => {
    if (ev.target instanceof Element && ev.target.id === "rename-form") renaming(false);
  });

  // --- Theme ------------------------------------------------------------------------------

  // The toggle goes system → light → dark → system; theme.js applies the choice at load.
  const themes = ["system", "light", "dark"];
  const themeNames = { system: "follows the system", light: "light", dark: "dark" };
  const showTheme = () => {
    const b = $("#theme");
    const t = document.documentElement.dataset.theme || "system";
    if (!b) return;
    b.setAttribute("aria-label", "Theme: " + themeNames[t]);
    b.title = "Theme: " + themeNames[t] + " (click for light, dark, system)";
    b.textContent = t === "light" ? "☀" : t === "dark" ? "☾" : "◐";
  };
  showTheme();
  document.addEventListener("click", (ev) => {
    if (!(ev.target instanceof Element) || !ev.target.closest("#theme")) return;
    const cur = document.documentElement.dataset.theme || "system";
    const next = themes[(themes.indexOf(cur) + 1) % themes.length];
    if (next === "system") delete document.documentElement.dataset.theme;
    else document.documentElement.dataset.theme = next;
    try {
      if (next === "system") localStorage.removeItem("myco-theme");
      else localStorage.setItem("myco-theme", next);
    } catch (e) {
      // storage off: the choice lasts for this page
    }
    showTheme();
  });

  // The sidebar shows the open session: it may be far down its project's sessions.
  const currentSide = document.querySelector(".sidebar li.current");
  if (currentSide && currentSide.scrollIntoView) currentSide.scrollIntoView({ block: "nearest" });

  // --- The quick switcher ------------------------------------------------------------------

  // Ctrl+K goes to the header's search box; as you type, the sessions whose title matches
  // and the messages that do show under it (htmx fetches them). ↓ and ↑ move through them,
  // Enter opens the one chosen (or, with none chosen, the sessions page's search), Escape
  // closes them.
  const switchInput = $("#search");
  const switchList = $("#switch-results");
  if (switchInput && switchList) {
    const options = () => [...switchList.querySelectorAll("[role=option]")];
    const choose = (el) => {
      for (const o of options()) o.setAttribute("aria-selected", String(o === el));
      if (el) {
        switchInput.setAttribute("aria-activedescendant", el.id);
        el.scrollIntoView({ block: "nearest" });
      } else {
        switchInput.removeAttribute("aria-activedescendant");
      }
    };
    const open = (yes) => {
      switchList.classList.toggle("open", yes);
      switchInput.setAttribute("aria-expanded", String(yes));
    };
    new MutationObserver(() => {
      open(switchList.children.length > 0 && switchInput.value.trim() !== "");
      choose(null);
    }).observe(switchList, { childList: true });
    switchInput.addEventListener("keydown", (ev) => {
      const list = options();
      const at = list.findIndex((o) => o.getAttribute("aria-selected") === "true");
      if (ev.key === "ArrowDown" || ev.key === "ArrowUp") {
        if (!list.length) return;
        ev.preventDefault();
        open(true);
        const next = ev.key === "ArrowDown" ? (at + 1) % list.length : (at <= 0 ? list.length - 1 : at - 1);
        choose(list[next]);
      } else if (ev.key === "Enter" && at >= 0) {
        ev.preventDefault();
        location.href = list[at].href;
      } else if (ev.key === "Escape") {
        open(false);
        choose(null);
      }
    });
    switchInput.addEventListener("blur", () => setTimeout(() => open(false), 200));
    switchInput.addEventListener("focus", () => open(switchList.children.length > 0 && switchInput.value.trim() !== ""));
  }

  // --- The dock does not cover what is brought into view ----------------------------------
  // The dock (approvals, mode, status, composer) is sticky at the bottom and grows with
  // what it holds; whatever the page or the browser scrolls into view (a link's target, a
  // focused control, an Edit form's Send) is kept above it.
  const dock = document.querySelector(".dock");
  if (dock && "ResizeObserver" in window) {
    new ResizeObserver(() => {
      document.documentElement.style.scrollPaddingBottom = dock.offsetHeight + "px";
    }).observe(dock);
  }
  // --- A turn that ends in the background -------------------------------------------------

  // When a turn ends while the tab is hidden, the tab's title says so ("● " before it) until
  // the tab is seen again (a notification is the states stream's, below).
  // baseTitle follows the session's title, which its stream may change (a rename, the
  // title of a first message); marked is the "● " a turn that ended unseen put before it.
  // The session's state puts "(needs you) " or "(failed) " before it too (the status bar's
  // data-title-prefix), so that a tab among many says which session waits for you.
  const titlePrefixes = ["● ", "(needs you) ", "(failed) "];
  const bareTitle = (t) => {
    for (let again = true; again; ) {
      again = false;
      for (const p of titlePrefixes) {
        if (t.startsWith(p)) {
          t = t.slice(p.length);
          again = true;
        }
      }
    }
    return t;
  };
  let baseTitle = bareTitle(document.title);
  let marked = false;
  const statePrefix = () => {
    const bar = document.querySelector("#status .status-bar");
    return (bar && bar.dataset.titlePrefix) || "";
  };
  const showTitle = () => {
    const want = (marked ? "● " : "") + statePrefix() + baseTitle;
    if (document.title !== want) document.title = want;
  };
  const titleEl = document.querySelector("title");
  if (titleEl) {
    new MutationObserver(() => {
      baseTitle = bareTitle(document.title);
      showTitle();
    }).observe(titleEl, { childList: true, characterData: true, subtree: true });
  }
  let wasBusy = !!document.querySelector("#status .status-bar.busy");
  const status = $("#status");
  if (status) {
    new MutationObserver(() => {
      const busy = !!status.querySelector(".status-bar.busy");
      if (wasBusy && !busy && document.hidden) marked = true;
      wasBusy = busy;
      showTitle();
    }).observe(status, { childList: true, subtree: true, attributes: true });
  }
  document.addEventListener("visibilitychange", () => {
    if (!document.hidden && marked) {
      marked = false;
      showTitle();
    }
  });

  // --- The session's live updates ---------------------------------------------------------

  // A session page gets its changes as htmx partials. Through the browser's SharedWorker
  // (one connection for every tab of the browser) when there is one; else the page opens
  // its own stream with htmx's SSE extension.
  // The Changes view of a turn follows the session's stream too (an element of its own).
  const streamEl = transcript || $("#changes-stream");
  const eventsURL = streamEl && streamEl.dataset.events;

  // applyPartials does what htmx does with a stream's partials: each <hx-partial> swaps
  // its content at its target, and htmx then wires what was added.
  const applyPartials = (html) => {
    const tpl = document.createElement("template");
    tpl.innerHTML = html;
    for (const p of Array.from(tpl.content.children)) {
      if (p.localName !== "hx-partial") continue;
      const target = document.querySelector(p.getAttribute("hx-target"));
      if (!target) continue;
      const frag = document.createDocumentFragment();
      frag.append(...p.childNodes);
      const added = Array.from(frag.children);
      switch (p.getAttribute("hx-swap")) {
        case "beforeend":
          target.append(frag);
          break;
        case "innerHTML":
          target.replaceChildren(frag);
          break;
        case "outerHTML":
          target.replaceWith(frag);
          break;
        case "delete":
          target.remove();
          break;
      }
      if (window.htmx) for (const el of added) window.htmx.process(el);
    }
  };

  const streamAlone = () => {
    if (!window.htmx) return; // no htmx: the page says to run make assets
    // After htmx's own start (on DOMContentLoaded, listened for before this script ran),
    // so the transcript is processed once and opens one stream.
    const start = () =>
      setTimeout(() => {
        streamEl.setAttribute("hx-sse:connect", eventsURL);
        window.htmx.process(streamEl);
      });
    if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
    else start();
  };

  const shared = () => {
    const url = document.body.dataset.eventsWorker;
    if (!url || !window.SharedWorker) return false;
    let worker;
    try {
      worker = new SharedWorker(url, { name: "myco-events" });
    } catch (e) {
      return false;
    }
    const sub = window.crypto && crypto.randomUUID ? crypto.randomUUID() : String(Math.random()).slice(2);
    // relayDown: the server lost this page's session stream (its profile's worker is down);
    // the browser's connection may be fine, so only the session's next event clears it.
    let relayDown = false;
    worker.port.onmessage = (m) => {
      const msg = m.data || {};
      switch (msg.type) {
        case "event":
          relayDown = false;
          alive();
          if (msg.event !== "ping" && msg.data) applyPartials(msg.data);
          break;
        case "open":
        case "ping":
          if (!relayDown) alive();
          else last = Date.now();
          break;
        case "down":
          setLost(true);
          break;
        case "status":
          if (msg.state === "reconnecting" || msg.state === "gone") {
            relayDown = true;
            setLost(true);
          } else if (msg.state === "live") {
            relayDown = false; // read again: the session may have nothing more to say
            alive();
          }
          break;
      }
    };
    worker.port.start();
    worker.port.postMessage({ op: "subscribe", sub, url: eventsURL });
    window.addEventListener("pagehide", () => worker.port.postMessage({ op: "unsubscribe", sub }));
    return true;
  };

  // --- The connection banner -------------------------------------------------------------

  // The event stream sends a ping every few seconds. The banner shows when the stream
  // fails, or when nothing (not even a ping) arrived for a while: a tunnel can die without
  // closing the connection.
  const banner = $("#conn-banner");
  const silence = 12000;
  let last = Date.now();
  let connected = false;
  const setLost = (lost) => {
    if (banner) banner.hidden = !lost;
    document.body.classList.toggle("disconnected", lost);
  };
  const alive = () => {
    last = Date.now();
    connected = true;
    setLost(false);
  };
  document.addEventListener("htmx:sse:after:connection", alive);
  document.addEventListener("htmx:sse:after:message", alive);
  document.addEventListener("ping", alive);
  document.addEventListener("htmx:sse:error", () => {
    connected = false;
    setLost(true);
  });
  document.addEventListener("htmx:sse:close", () => {
    connected = false;
    if (!document.hidden) setLost(true);
  });
  setInterval(() => {
    if (eventsURL && !document.hidden && Date.now() - last > silence) {
      setLost(true);
    }
  }, 2000);
  if (eventsURL && !shared()) streamAlone();
  document.addEventListener("visibilitychange", () => {
    if (!document.hidden) last = Date.now(); // the stream pauses in the background
  });
  void connected;

  // --- @path completion -------------------------------------------------------------------

  // Typing @ and a path in the composer lists the matching files of the session's
  // directory (the server reads them: data-complete on the prompt). ArrowUp/ArrowDown move,
  // Enter or Tab takes one (a directory lists its own entries next), Esc closes the list.
  // The prompt is a combobox over the listbox #at-list, for screen readers.
  let atToken = null; // {start, end} of the @token being completed
  let atTimer = 0;
  let atSeq = 0;
  const atList = () => $("#at-list");
  const atOpen = () => {
    const l = atList();
    return !!l && !l.hidden && l.children.length > 0;
  };
  const atClose = () => {
    const l = atList();
    const p = $("#prompt");
    if (l) {
      l.hidden = true;
      l.replaceChildren();
    }
    if (p) {
      p.removeAttribute("aria-activedescendant");
    }
    atToken = null;
  };
  const atSelect = (i) => {
    const l = atList();
    const p = $("#prompt");
    if (!l || !p) return;
    const items = [...l.children];
    items.forEach((li, j) => li.setAttribute("aria-selected", j === i ? "true" : "false"));
    if (items[i]) {
      p.setAttribute("aria-activedescendant", items[i].id);
      items[i].scrollIntoView({ block: "nearest" });
    }
  };
  const atSelected = () => [...(atList()?.children || [])].findIndex((li) => li.getAttribute("aria-selected") === "true");
  const atTake = (li) => {
    const p = $("#prompt");
    if (!p || !atToken || !li) return;
    const path = li.dataset.path;
    p.value = p.value.slice(0, atToken.start) + "@" + path + (li.dataset.dir ? "" : " ") + p.value.slice(atToken.end);
    const caret = atToken.start + 1 + path.length + (li.dataset.dir ? 0 : 1);
    p.setSelectionRange(caret, caret);
    atClose();
    p.focus();
    if (li.dataset.dir) atLookup(p);
  };
  const atLookup = (p) => {
    const url = p.dataset.complete;
    if (!url) return;
    const before = p.value.slice(0, p.selectionStart);
    const m = /(^|\s)@(\S*)$/.exec(before);
    const seq = ++atSeq; // a lookup still on its way is for text typed over since
    clearTimeout(atTimer);
    if (!m) {
      atClose();
      return;
    }
    const token = { start: before.length - m[2].length - 1, end: p.selectionStart };
    atTimer = setTimeout(async () => {
      let found = [];
      try {
        const resp = await fetch(url + "?q=" + encodeURIComponent(m[2]), { credentials: "same-origin" });
        if (resp.ok) found = await resp.json();
      } catch (e) {
        found = [];
      }
      // Typed on since, or the caret left the token: a late list would take the next Enter.
      if (seq !== atSeq || p.selectionStart !== token.end || p.value.slice(token.start, token.end) !== "@" + m[2]) return;
      const l = atList();
      if (!l || !found.length) {
        atClose();
        return;
      }
      atToken = token;
      l.replaceChildren(...found.map((f, i) => {
        const li = document.createElement("li");
        li.id = "at-" + i;
        li.setAttribute("role", "option");
        li.dataset.path = f.path;
        if (f.dir) li.dataset.dir = "1";
        li.textContent = f.path;
        return li;
      }));
      l.hidden = false;
      atSelect(0);
    }, 120);
  };
  document.addEventListener("input", (ev) => {
    if (ev.target instanceof HTMLTextAreaElement && ev.target.id === "prompt") atLookup(ev.target);
  });
  // Before the page's own keys (Enter sends, Esc stops): while the list is open, they are its.
  document.addEventListener("keydown", (ev) => {
    if (!(ev.target instanceof Element) || ev.target.id !== "prompt" || !atOpen()) return;
    const n = atList().children.length;
    const i = atSelected();
    switch (ev.key) {
      case "ArrowDown":
        atSelect((i + 1) % n);
        break;
      case "ArrowUp":
        atSelect((i - 1 + n) % n);
        break;
      case "Enter":
      case "Tab":
        if (ev.shiftKey) return;
        atTake(atList().children[Math.max(i, 0)]);
        break;
      case "Escape":
        atClose();
        break;
      default:
        return;
    }
    ev.preventDefault();
    ev.stopImmediatePropagation();
  }, true);
  document.addEventListener("mousedown", (ev) => {
    const li = ev.target instanceof Element ? ev.target.closest("#at-list li") : null;
    if (li) {
      ev.preventDefault(); // keep the prompt's focus
      atTake(li);
    }
  });
  document.addEventListener("focusout", (ev) => {
    if (ev.target instanceof Element && ev.target.id === "prompt") setTimeout(() => {
      if (document.activeElement?.id !== "prompt") atClose();
    }, 0);
  });
})();
