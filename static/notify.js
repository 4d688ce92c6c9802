// Notifications when a session comes to need you. They are opt-in, in this browser (its
// localStorage: the browser's permission to notify is this browser's too): for one session
// (its page's Notify me, the key "myco-notify:" and its page's path) or for every session
// (the sessions page's, "myco-notify" = "on"). A page of a profile with one of them on
// follows the profile's states stream (body's data-states, through the browser's events
// worker) and, while its tab is hidden, notifies when such a session comes to need you or
// fails, with the session's title and why; a session opted in by itself notifies when its
// turn is done, too. "Every session" leaves child sessions (ones an agent started) out: their
// failures go to the agent that started them, and a call of theirs that waits for approval
// makes each session above them need you, so their root tells it, once.
// Without a switch, the page of a session tells of a call of it (or of a session it started)
// that waits for approval while its tab is hidden. Clicking the notification brings the tab forward on the session's page. Several hidden
// tabs notify once: a notification replaces the one of the same session (its tag).
(() => {
  "use strict";

  const allKey = "myco-notify";
  const sessionKey = (url) => "myco-notify:" + url;
  const read = (k) => {
    try {
      return localStorage.getItem(k);
    } catch (e) {
      return null; // no storage: nothing is opted in
    }
  };
  const write = (k, on) => {
    try {
      if (on) localStorage.setItem(k, "on");
      else localStorage.removeItem(k);
    } catch (e) {
      // no storage: nothing to remember
    }
  };
  const supported = () => "Notification" in window;
  const granted = () => supported() && Notification.permission === "granted";
  const forAll = () => read(allKey) === "on";
  const forSession = (url) => read(sessionKey(url)) === "on";
  const base = document.body.dataset.base || "";
  // anyOn: some session of this profile is opted in, or all are.
  const anyOn = () => {
    if (forAll()) return true;
    try {
      for (let i = 0; i < localStorage.length; i++) {
        if (localStorage.key(i)?.startsWith(sessionKey(base + "/"))) return true;
      }
    } catch (e) {
      // no storage
    }
    return false;
  };

  // --- The switches ----------------------------------------------------------------------

  // A switch asks the browser's permission when it is turned on (a click: browsers ask only
  // on a person's gesture); a refusal leaves it off and says so in its title.
  const wire = (button, key) => {
    if (!button) return;
    if (!supported()) {
      button.hidden = true;
      return;
    }
    const show = () => button.setAttribute("aria-pressed", String(read(key) === "on" && granted()));
    show();
    button.addEventListener("click", async () => {
      if (read(key) === "on" && granted()) {
        write(key, false);
      } else {
        let p = Notification.permission;
        try {
          if (p !== "granted") p = await Notification.requestPermission();
        } catch (e) {
          p = "denied";
        }
        if (p === "granted") {
          write(key, true);
        } else {
          button.title = "This browser does not let myco notify you: allow notifications for this site in its settings, then try again";
        }
      }
      show();
      follow();
    });
    window.addEventListener("storage", show); // another tab's switch
  };
  const one = document.getElementById("notify");
  // page is the session this page shows ("" on other pages): a call of it, or of a session
  // it started, that waits for approval is told without a switch, once the browser allows
  // notifications, which the person's first answer to an approval asks.
  const page = one ? one.dataset.session || location.pathname : "";
  wire(one, sessionKey(page));
  document.addEventListener("click", (ev) => {
    if (ev.target instanceof Element && ev.target.closest(".approval-answers") && supported() && Notification.permission === "default") {
      Notification.requestPermission().then(follow, () => {});
    }
  });
  wire(document.getElementById("notify-all"), allKey);

  // --- Telling ---------------------------------------------------------------------------

  const last = new Map(); // session id → the state last told
  const tell = (c) => {
    const before = last.get(c.session);
    last.set(c.session, c.state);
    if (before === c.state || !document.hidden || !granted()) return;
    const mine = forSession(c.url);
    let want = false;
    switch (c.state) {
      case "needs_you":
      case "failed":
        want = mine || (c.url === page && c.approval) || (forAll() && !c.child);
        break;
      case "done":
        // a turn ended: the session's own switch only (every session's would tell of each
        // turn of a busy day)
        want = mine && (before === undefined || before === "working");
        break;
    }
    if (!want) return;
    try {
      const n = new Notification(c.title, { body: c.why || "", tag: "myco:" + c.url });
      n.onclick = () => {
        window.focus();
        n.close();
        if (location.pathname !== c.url) location.assign(c.url);
      };
    } catch (e) {
      // a notification the browser refuses is no reason to fail
    }
  };
  // The page says when it follows the states: from then on, a change is told.
  const live = () => {
    document.documentElement.dataset.notifications = "live";
  };
  const onData = (data) => {
    let c;
    try {
      c = JSON.parse(data);
    } catch (e) {
      return;
    }
    if (c && typeof c.session === "string" && typeof c.url === "string") tell(c);
  };

  // --- Following the states --------------------------------------------------------------

  // The profile's states stream, through the browser's events worker when there is one
  // (one connection for all of the browser's pages), else a stream of the page's own.
  const url = document.body.dataset.states;
  let following = false;
  const follow = () => {
    if (following || !url || !granted() || (!anyOn() && !page)) return;
    following = true;
    const workerURL = document.body.dataset.eventsWorker;
    if (workerURL && window.SharedWorker) {
      try {
        const worker = new SharedWorker(workerURL, { name: "myco-events" });
        const sub = window.crypto && crypto.randomUUID ? crypto.randomUUID() : String(Math.random()).slice(2);
        worker.port.onmessage = (m) => {
          const msg = m.data || {};
          if (msg.type !== "event") return;
          live();
          if (msg.event === "state" && msg.data) onData(msg.data);
        };
        worker.port.start();
        worker.port.postMessage({ op: "subscribe", sub, url });
        window.addEventListener("pagehide", () => worker.port.postMessage({ op: "unsubscribe", sub }));
        return;
      } catch (e) {
        // no worker after all: a stream of its own
      }
    }
    const source = new EventSource(url);
    source.addEventListener("ping", live);
    source.addEventListener("state", (ev) => {
      live();
      onData(ev.data);
    });
    window.addEventListener("pagehide", () => source.close());
  };
  follow();
  window.addEventListener("storage", follow); // switched on in another tab
})();
