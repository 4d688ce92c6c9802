// The theme the user chose (light, dark), or none to follow the system: set on <html>
// before the page paints, so that a dark page never flashes light. app.js has the toggle.
"use strict";
try {
  const t = localStorage.getItem("myco-theme");
  if (t === "light" || t === "dark") document.documentElement.dataset.theme = t;
} catch (e) {
  // storage may be off; the system's theme it is
}
