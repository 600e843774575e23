/**
 * The lazily expanding volumes tree: catalogs > schemas > volumes > folders > files.
 *
 * Catalogs, schemas and volumes come from one `GET volumes`; a volume or folder lists its children
 * (`GET volumes?path=...`) only when expanded, one page at a time ("load more" fetches the next).
 * Clicking a name copies its `/Volumes/...` path; the row's buttons insert an `%air_volume ls` or
 * `%%air_copy` snippet into the active notebook.
 *
 * The tree is a flat list of keyed rows (`dom.ts`): expanding a folder inserts its rows, and a
 * reload that brings the same entries touches no row, so the expanded state, hover and focus
 * survive every refresh.
 */
import { TranslationBundle } from '@jupyterlab/translation';
import {
  caretDownIcon,
  caretRightIcon,
  fileIcon,
  folderIcon,
  LabIcon
} from '@jupyterlab/ui-components';

import { IFolderPage, IVolumesDoc, requestAPI, IEntry } from './api';
import { KeyedNodes } from './dom';
import { el, fmtBytes, fmtInt } from './format';
import { DEFAULT_SETTINGS } from './settings';

export type SnippetKind = 'ls' | 'copy';

export interface ITreeActions {
  copyPath(path: string): void;
  insertSnippet(kind: SnippetKind, path: string): void;
}

interface IFolderState {
  entries: IEntry[];
  total: number;
  next: number | null;
  loading: boolean;
  error: string | null;
}

type Kind = 'catalog' | 'schema' | 'volume' | 'dir' | 'file';

/** One line of the tree, everything its node depends on (its signature is this as JSON). */
type Line =
  | {
      type: 'row';
      kind: Kind;
      name: string;
      path: string;
      depth: number;
      size: number | null;
      volumeKind: string;
      open: boolean;
      busy: boolean;
    }
  | { type: 'note'; cls: string; text: string; depth: number }
  | { type: 'more'; path: string; depth: number; text: string };

/** Volumes with at most this many are shown at once (catalogs and schemas open). */
const OPEN_ALL_BELOW = 30;

const indent = (depth: number): string => `${depth * 14 + 22}px`;

export class VolumesTree {
  readonly node: HTMLElement;

  /** Entries per folder page (the `pageSize` setting); applies to the next page loaded. */
  pageSize = DEFAULT_SETTINGS.pageSize;

  constructor(
    private readonly _actions: ITreeActions,
    private readonly _volumeIcon: LabIcon,
    private readonly _trans: TranslationBundle
  ) {
    this.node = el('div', 'air-tree');
    this.node.setAttribute('role', 'tree');
  }

  /**
   * Fetch the volumes again; with `folders`, also reload every expanded folder (as many entries as
   * are shown). Reloads are quiet: no "Loading..." flashes over entries already shown.
   */
  async refresh(folders = false): Promise<void> {
    try {
      this._doc = await requestAPI<IVolumesDoc>('volumes');
      this._error = null;
      if (!this._initialised) {
        this._initialised = true;
        if (this._doc.count <= OPEN_ALL_BELOW) {
          for (const c of this._doc.catalogs) {
            this._expanded.add(`/Volumes/${c.name}`);
            for (const s of c.schemas) {
              this._expanded.add(`/Volumes/${c.name}/${s.name}`);
            }
          }
        }
      }
    } catch (error) {
      this._error = this._trans.__('Cannot list volumes: %1', (error as Error).message);
    }
    this.render();
    if (folders) {
      const open = [...this._folders.keys()].filter(p => this._expanded.has(p));
      await Promise.all(open.map(p => this._load(p, 0, true)));
    }
  }

  /** Expand (or collapse) the node at `path`, loading a folder's first page when needed. */
  async toggle(path: string, kind: Kind): Promise<void> {
    if (this._expanded.has(path)) {
      this._expanded.delete(path);
      this.render();
      return;
    }
    this._expanded.add(path);
    const known = this._folders.get(path);
    if ((kind === 'volume' || kind === 'dir') && (!known || known.error)) {
      await this._load(path, 0);
    } else {
      this.render();
    }
  }

  /** Bring the DOM in line with the state, touching only the lines that changed. */
  render(): void {
    const lines = this._lines();
    this._nodes.update(
      this.node,
      lines.map(line => ({ key: VolumesTree._key(line), sig: JSON.stringify(line), item: line }))
    );
  }

  /** Load a page at `offset` (0: the first page, replacing what is shown; a quiet reload keeps as
   * many entries as are shown and no "Loading..." line). */
  private async _load(path: string, offset: number, quiet = false): Promise<void> {
    const state: IFolderState = this._folders.get(path) ?? {
      entries: [],
      total: 0,
      next: null,
      loading: false,
      error: null
    };
    this._folders.set(path, state);
    if (!quiet) {
      state.loading = true;
      this.render();
    }
    const limit = quiet ? Math.min(1000, Math.max(this.pageSize, state.entries.length)) : this.pageSize;
    try {
      const page = await requestAPI<IFolderPage>('volumes', { path, offset, limit });
      state.entries = offset === 0 ? page.entries : state.entries.concat(page.entries);
      state.total = page.total;
      state.next = page.next_offset;
      state.error = null;
    } catch (error) {
      state.error = (error as Error).message;
    }
    state.loading = false;
    this.render();
  }

  private _lines(): Line[] {
    const trans = this._trans;
    const lines: Line[] = [];
    if (this._error) {
      lines.push({ type: 'note', cls: 'air-error', text: this._error, depth: -1 });
    }
    if (!this._doc) {
      if (!this._error) {
        lines.push({ type: 'note', cls: 'air-muted', text: trans.__('Loading volumes...'), depth: -1 });
      }
      return lines;
    }
    if (this._doc.count === 0) {
      const text = trans.__(
        'No volumes yet in %1: create one with %2',
        this._doc.root,
        '%air_volume create catalog.schema.volume'
      );
      lines.push({ type: 'note', cls: 'air-muted', text, depth: -1 });
      return lines;
    }
    for (const cat of this._doc.catalogs) {
      const catPath = `/Volumes/${cat.name}`;
      lines.push(this._row('catalog', cat.name, catPath, 0));
      if (!this._expanded.has(catPath)) {
        continue;
      }
      for (const sch of cat.schemas) {
        const schPath = `${catPath}/${sch.name}`;
        lines.push(this._row('schema', sch.name, schPath, 1));
        if (!this._expanded.has(schPath)) {
          continue;
        }
        for (const vol of sch.volumes) {
          lines.push(this._row('volume', vol.name, vol.path, 2, null, vol.kind));
          this._children(lines, vol.path, 3);
        }
      }
    }
    return lines;
  }

  private _children(lines: Line[], path: string, depth: number): void {
    const state = this._folders.get(path);
    if (!state || !this._expanded.has(path)) {
      return;
    }
    for (const e of state.entries) {
      lines.push(this._row(e.is_dir ? 'dir' : 'file', e.name, e.path, depth, e.size));
      if (e.is_dir) {
        this._children(lines, e.path, depth + 1);
      }
    }
    const trans = this._trans;
    if (state.error) {
      lines.push({ type: 'note', cls: 'air-error', text: state.error, depth });
    }
    if (state.loading) {
      lines.push({ type: 'note', cls: 'air-muted', text: trans.__('Loading...'), depth });
    } else if (state.next !== null) {
      const text = trans.__(
        'Load more (%1 of %2 shown)',
        fmtInt(state.entries.length),
        fmtInt(state.total)
      );
      lines.push({ type: 'more', path, depth, text });
    } else if (!state.error && state.entries.length === 0) {
      lines.push({ type: 'note', cls: 'air-muted', text: trans.__('(empty)'), depth });
    }
  }

  private _row(
    kind: Kind,
    name: string,
    path: string,
    depth: number,
    size: number | null = null,
    volumeKind = ''
  ): Line {
    const open = this._expanded.has(path);
    const busy = this._folders.get(path)?.loading ?? false;
    return { type: 'row', kind, name, path, depth, size, volumeKind, open, busy };
  }

  /** A line's identity across renders: rows by path, notes by their folder and text. */
  private static _key(line: Line): string {
    switch (line.type) {
      case 'row':
        return `row:${line.path}`;
      case 'more':
        return `more:${line.path}`;
      case 'note':
        return `note:${line.depth}:${line.cls}:${line.text}`;
    }
  }

  private _renderLine(line: Line): HTMLElement {
    if (line.type === 'row') {
      return this._renderRow(line);
    }
    if (line.type === 'more') {
      const more = el('button', 'air-link air-tree-more', line.text);
      more.style.marginLeft = indent(line.depth);
      more.onclick = () => {
        const state = this._folders.get(line.path);
        if (state && state.next !== null && !state.loading) {
          void this._load(line.path, state.next);
        }
      };
      return more;
    }
    if (line.depth < 0) {
      return el('div', line.cls, line.text);
    }
    const note = el('div', `${line.cls} air-tree-note`, line.text);
    note.style[line.cls === 'air-error' ? 'marginLeft' : 'paddingLeft'] = indent(line.depth);
    return note;
  }

  private _renderRow(line: Extract<Line, { type: 'row' }>): HTMLElement {
    const { kind, name, path, depth, size, volumeKind, open, busy } = line;
    const trans = this._trans;
    const expandable = kind !== 'file';
    const row = el('div', `air-tree-row air-tree-${kind}`);
    row.setAttribute('role', 'treeitem');
    row.dataset.path = path;
    row.dataset.kind = kind;
    if (expandable) {
      row.setAttribute('aria-expanded', String(open));
      row.setAttribute('aria-busy', String(busy));
    }
    row.style.paddingLeft = `${depth * 14 + 4}px`;

    const caret = el('span', 'air-tree-caret');
    if (expandable) {
      (open ? caretDownIcon : caretRightIcon).element({ container: caret });
      caret.title = open ? trans.__('Collapse') : trans.__('Expand');
      caret.onclick = ev => {
        ev.stopPropagation();
        void this.toggle(path, kind);
      };
    }
    row.appendChild(caret);

    const icon = el('span', 'air-tree-icon');
    const lab = kind === 'file' ? fileIcon : kind === 'volume' ? this._volumeIcon : folderIcon;
    lab.element({ container: icon });
    row.appendChild(icon);

    const label = el('span', 'air-tree-name', name);
    const isPath = kind === 'volume' || kind === 'dir' || kind === 'file';
    label.title = isPath ? trans.__('%1\nclick: copy this path', path) : path;
    row.appendChild(label);

    if (kind === 'file') {
      row.appendChild(el('span', 'air-tree-size', fmtBytes(size)));
    } else if (kind === 'volume' && volumeKind && volumeKind !== 'embedded') {
      row.appendChild(el('span', 'air-tree-size', volumeKind));
    }

    if (!isPath) {
      row.onclick = () => void this.toggle(path, kind);
      return row;
    }
    const actions = el('span', 'air-tree-actions');
    const ls = el('button', 'air-action', 'ls');
    ls.title = trans.__('Insert %1 into the active notebook', `%air_volume ls ${path}`);
    ls.dataset.action = 'ls';
    ls.onclick = ev => {
      ev.stopPropagation();
      this._actions.insertSnippet('ls', path);
    };
    const cp = el('button', 'air-action', trans.__('copy'));
    cp.title = trans.__('Insert a %1 cell for %2 into the active notebook', '%%air_copy', path);
    cp.dataset.action = 'copy';
    cp.onclick = ev => {
      ev.stopPropagation();
      this._actions.insertSnippet('copy', path);
    };
    actions.append(ls, cp);
    row.appendChild(actions);
    label.onclick = () => this._actions.copyPath(path);
    if (expandable) {
      label.ondblclick = () => void this.toggle(path, kind);
    }
    return row;
  }

  private _doc: IVolumesDoc | null = null;
  private _error: string | null = null;
  private _initialised = false;
  private _expanded = new Set<string>();
  private _folders = new Map<string, IFolderState>();
  private _nodes = new KeyedNodes<Line>(line => this._renderLine(line));
}
