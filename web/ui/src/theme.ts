// Applies the saved colour scheme before the first paint: a classic script in <head> (a file, not
// inline: the CSP has no 'unsafe-inline' for scripts). 'system' or no saved choice: the system
// setting decides (style.css). The settings page (settings.tsx) and the header's switch (main.tsx)
// save the choice under the same key.
try {
  const saved = localStorage.getItem('airlock-theme');
  if (saved === 'light' || saved === 'dark') document.documentElement.dataset.theme = saved;
} catch {
  // Storage blocked: follow the system.
}
