import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

/**
 * The repository stands on its own: no file refers to a path outside it (the
 * product reference is docs/design.md, not a document next to the clone), and
 * every relative link in the Markdown files resolves to a file inside it.
 */
const root = path.resolve(__dirname, '../..');

// Built from parts so that this file does not match its own patterns.
const OUTSIDE = [['..', 'shared'].join('/'), ['shared', 'DESIGN.md'].join('/'), ['DESIGN', '§'].join(' ')];

function repositoryFiles(): string[] {
  try {
    const out = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', '-z'], { cwd: root, encoding: 'utf8' });
    return out.split('\0').filter((f) => f && existsSync(path.join(root, f)));
  } catch {
    // Not a git checkout (an unpacked archive): every file but what is installed or built.
    const skip = new Set(['node_modules', 'dist', '.git']);
    const walk = (dir: string): string[] =>
      readdirSync(path.join(root, dir)).flatMap((name) => {
        if (skip.has(name)) return [];
        const rel = dir ? `${dir}/${name}` : name;
        return statSync(path.join(root, rel)).isDirectory() ? walk(rel) : [rel];
      });
    return walk('');
  }
}

function readText(file: string): string | undefined {
  const buf = readFileSync(path.join(root, file));
  return buf.includes(0) ? undefined : buf.toString('utf8');
}

/** Relative link targets of a Markdown text, code blocks and code spans left out. */
function markdownLinkTargets(markdown: string): string[] {
  const prose = markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '').replace(/`[^`\n]*`/g, '');
  const targets = [...prose.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g), ...prose.matchAll(/^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/gm)].map((m) => m[1]);
  return targets.filter((t) => !/^[a-z][a-z0-9+.-]*:/i.test(t) && !t.startsWith('#'));
}

/** The anchors GitHub gives a Markdown file's headings (lower case, punctuation dropped, spaces to hyphens, repeats numbered). */
function headingAnchors(markdown: string): Set<string> {
  const prose = markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '');
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const [, heading] of prose.matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = heading
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/ /g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

describe('the repository stands on its own', () => {
  const files = repositoryFiles();
  const texts = files.map((file) => ({ file, text: readText(file) })).filter((f): f is { file: string; text: string } => f.text !== undefined);

  it('lists its files', () => {
    expect(files).toEqual(expect.arrayContaining(['README.md', 'docs/design.md', 'package.json']));
  });

  it('has no file that refers to a document outside it', () => {
    const found = texts.flatMap(({ file, text }) =>
      text.split('\n').flatMap((line, i) => OUTSIDE.filter((needle) => line.includes(needle)).map((needle) => `${file}:${i + 1}: ${needle}`)),
    );
    expect(found).toEqual([]);
  });

  it('has no Markdown link that leaves it or points at a missing file', () => {
    const bad = texts
      .filter(({ file }) => file.endsWith('.md'))
      .flatMap(({ file, text }) =>
        markdownLinkTargets(text).flatMap((target) => {
          const pathPart = decodeURIComponent(target.replace(/[#?].*$/, ''));
          if (!pathPart) return [];
          const resolved = path.resolve(root, path.dirname(file), pathPart);
          const rel = path.relative(root, resolved);
          if (rel.startsWith('..') || path.isAbsolute(rel) || pathPart.startsWith('/')) return [`${file}: ${target} leaves the repository`];
          return existsSync(resolved) ? [] : [`${file}: ${target} does not exist`];
        }),
      );
    expect(bad).toEqual([]);
  });

  it('has no Markdown link to a heading that is not there', () => {
    const markdown = new Map(texts.filter(({ file }) => file.endsWith('.md')).map(({ file, text }) => [file, text]));
    const bad = [...markdown].flatMap(([file, text]) =>
      [...markdownLinkTargets(text), ...[...text.matchAll(/\]\((#[^)\s]+)\)/g)].map((m) => m[1])]
        .filter((target) => /^[^?#]*\.md#|^#/.test(target))
        .flatMap((target) => {
          const [pathPart, anchor] = target.split('#');
          const targetFile = pathPart ? path.relative(root, path.resolve(root, path.dirname(file), decodeURIComponent(pathPart))) : file;
          const content = markdown.get(targetFile);
          return content === undefined || headingAnchors(content).has(decodeURIComponent(anchor)) ? [] : [`${file}: ${target} names no heading`];
        }),
      );
    expect(bad).toEqual([]);
  });

  it('catches what it is meant to catch', () => {
    expect(markdownLinkTargets(`see [brief](${OUTSIDE[0]}/x.md), [ok](docs/design.md#a), [web](https://x.org), [top](#t)\n[ref]: ../../up.md`)).toEqual([
      `${OUTSIDE[0]}/x.md`,
      'docs/design.md#a',
      '../../up.md',
    ]);
    expect(markdownLinkTargets('```\n[not](../a.md)\n```\n`[nor](../b.md)`')).toEqual([]);
    expect([...headingAnchors('# 8.5 MCP tools\n## A `code` — [link](x.md) thing\n### Dup\n### Dup\n```\n# not a heading\n```')]).toEqual(['85-mcp-tools', 'a-code--link-thing', 'dup', 'dup-1']);
  });
});
