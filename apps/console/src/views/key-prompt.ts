import { h, type VNode } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';

/** Shown when the gateway answers 401: the key goes to sessionStorage, never into the URL or a cookie. */
export function KeyPrompt({ onKey }: { onKey(key: string): void }): VNode<any> {
  const [key, setKey] = useState('');
  const input = useRef<HTMLInputElement>(null);
  useEffect(() => input.current?.focus(), []);
  return h(
    'form',
    {
      class: 'key-prompt',
      'aria-labelledby': 'key-title',
      onSubmit: (e: Event) => {
        e.preventDefault();
        if (key.trim()) onKey(key.trim());
      },
    },
    h('h2', { id: 'key-title' }, 'This gateway needs an API key'),
    h('p', null, 'The key is kept in this tab only (sessionStorage).'),
    h('label', { for: 'api-key' }, 'API key'),
    h('input', { id: 'api-key', ref: input, type: 'password', autocomplete: 'off', value: key, onInput: (e: Event) => setKey((e.target as HTMLInputElement).value) }),
    h('button', { type: 'submit' }, 'Use this key'),
  );
}
