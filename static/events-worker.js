// The browser's one event connection. Every page of myco that shows a session asks this
// SharedWorker for that session's events instead of opening a stream of its own: the worker
// holds one stream to the server's /events, subscribes each page through it, and passes each
// page its events. When the stream drops it opens a new one and subscribes every page again
// from the last event it got, so a page misses nothing.
"use strict";

const pages = new Map(); // sub -> {port, url, after}
let stream = null; // {id, source}
let connecting = false;

function broadcast(msg) {
  for (const p of pages.values()) p.port.postMessage(msg);
}

async function subscribe(sub, p) {
  if (!stream) return;
  const u = new URL(p.url, self.location.origin);
  try {
    const resp = await fetch("/events/" + stream.id, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ op: "subscribe", sub, url: u.pathname, after: p.after }),
    });
    if (!resp.ok) p.port.postMessage({ type: "status", state: "refused", status: resp.status });
  } catch (e) {
    // the stream is down too; the next hello subscribes again
  }
}

function connect() {
  if (connecting || stream) return;
  connecting = true;
  const source = new EventSource("/events");
  source.onmessage = (ev) => {
    let msg;
    try {
      msg = JSON.parse(ev.data);
    } catch (e) {
      return;
    }
    switch (msg.type) {
      case "hello":
        stream = { id: msg.stream, source };
        connecting = false;
        broadcast({ type: "open" });
        for (const [sub, p] of pages) subscribe(sub, p);
        break;
      case "ping":
        broadcast({ type: "ping" });
        break;
      case "event": {
        const p = pages.get(msg.sub);
        if (!p) break;
        if (msg.id) p.after = msg.id;
        p.port.postMessage(msg);
        break;
      }
      case "status": {
        const p = pages.get(msg.sub);
        if (p) p.port.postMessage(msg);
        break;
      }
    }
  };
  source.onerror = () => {
    // EventSource retries on its own; a new stream brings a new hello.
    stream = null;
    connecting = true;
    broadcast({ type: "down" });
    if (source.readyState === EventSource.CLOSED) {
      connecting = false;
      setTimeout(connect, 1000);
    }
  };
}

self.onconnect = (e) => {
  const port = e.ports[0];
  port.onmessage = (m) => {
    const msg = m.data || {};
    if (msg.op === "subscribe" && typeof msg.sub === "string" && typeof msg.url === "string") {
      const u = new URL(msg.url, self.location.origin);
      const p = { port, url: u.pathname, after: msg.after || u.searchParams.get("after") || "" };
      pages.set(msg.sub, p);
      connect();
      if (stream) {
        port.postMessage({ type: "open" });
        subscribe(msg.sub, p);
      }
    } else if (msg.op === "unsubscribe" && pages.has(msg.sub)) {
      pages.delete(msg.sub);
      if (stream) {
        fetch("/events/" + stream.id, {
          method: "POST",
          headers: { "Content-Type": "application/json" },
          body: JSON.stringify({ op: "unsubscribe", sub: msg.sub }),
        }).catch(() => {});
      }
    }
  };
  port.start();
};
