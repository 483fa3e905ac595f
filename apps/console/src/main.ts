import { h, render } from 'preact';
import { App } from './app';

// The page's only script (the Content-Security-Policy allows no inline one).
const root = document.getElementById('app');
if (root) {
  // The placeholder is for a page whose script did not run; Preact would keep it beside the app.
  root.textContent = '';
  render(h(App, null), root);
}
