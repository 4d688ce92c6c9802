// myco's own script: keyboard shortcuts, following the transcript, and the connection
// banner. Everything else is htmx. Nothing here uses eval or inline handlers, so the page's
// content policy (script-src 'self') holds.
(() => {
  "use strict";

  const $ = (sel) => document.querySelector(sel);

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
    if (t && t.id === "prompt" && ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) {
      ev.preventDefault();
      const form = t.form;
      if (form && t.value.trim() !== "") form.requestSubmit();
    }
  });

  // --- Following the transcript ----------------------------------------------------------

  // The page follows new output while the reader is at the bottom; once they scroll up it
  // stays put and offers a button back to the latest.
  const nearBottom = () => window.innerHeight + window.scrollY >= document.documentElement.scrollHeight - 80;
  let follow = true;
  const latest = () => $("#to-latest");

  window.addEventListener("scroll", () => {
    follow = nearBottom();
    const b = latest();
    if (b) b.hidden = follow;
  }, { passive: true });

  const toBottom = () => window.scrollTo({ top: document.documentElement.scrollHeight });

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
      if (follow) toBottom();
    }).observe(transcript, { childList: true, subtree: true, characterData: true });
  }

  // After the composer is swapped in (a message was sent or refused), type on.
  document.addEventListener("htmx:after:swap", () => {
    const p = $("#prompt");
    if (p && document.activeElement === document.body) p.focus();
  });

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
    if (transcript && transcript.hasAttribute("hx-sse:connect") && !document.hidden && Date.now() - last > silence) {
      setLost(true);
    }
  }, 2000);
  document.addEventListener("visibilitychange", () => {
    if (!document.hidden) last = Date.now(); // the stream pauses in the background
  });
  void connected;
})();
