import { h, render } from 'preact';
import { App } from './app';

// The page's only script (the Content-Security-Policy allows no inline one).
const root = document.getElementById('app');
if (root) render(h(App, null), root);
