// Applies the saved colour scheme before the first paint (a file, not inline: the CSP has no
// 'unsafe-inline' for scripts). No saved choice: the system setting decides (style.css).
try {
  var saved = localStorage.getItem('airlock-theme');
  if (saved === 'light' || saved === 'dark') document.documentElement.dataset.theme = saved;
} catch (e) {
  // Storage blocked: follow the system.
}
