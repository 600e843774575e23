/**
 * The lazily expanding volumes tree: catalogs > schemas > volumes > folders > files.
 *
 * Catalogs, schemas and volumes come from one `GET volumes`; a volume or folder lists its children
 * (`GET volumes?path=...`) only when expanded, one page at a time ("load more" fetches the next).
 * Clicking a name copies its `/Volumes/...` path; the row's buttons insert an `%air_volume ls` or
 * `%%air_copy` snippet into the active notebook.
 */
import {
  caretDownIcon,
  caretRightIcon,
  fileIcon,
  folderIcon,
  LabIcon
} from '@jupyterlab/ui-components';

import { IEntry, IFolderPage, IVolumesDoc, requestAPI } from './api';
import { el, fmtBytes, fmtInt } from './format';

export const PAGE_SIZE = 200;

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

export class VolumesTree {
  readonly node: HTMLElement;

  constructor(
    private readonly actions: ITreeActions,
    private readonly volumeIcon: LabIcon
  ) {
    this.node = el('div', 'air-tree');
    this.node.setAttribute('role', 'tree');
  }

  /** Fetch the volumes again; with `folders`, also reload the first page of every expanded folder. */
  async refresh(folders = false): Promise<void> {
    try {
      this._doc = await requestAPI<IVolumesDoc>('volumes');
      this._error = null;
      if (!this._initialised) {
        this._initialised = true;
        // few volumes: show them at once (catalogs and schemas open)
        if (this._doc.count <= 30) {
          for (const c of this._doc.catalogs) {
            this._expanded.add(`/Volumes/${c.name}`);
            for (const s of c.schemas) {
              this._expanded.add(`/Volumes/${c.name}/${s.name}`);
            }
          }
        }
      }
    } catch (error) {
      this._error = `Cannot list volumes: ${(error as Error).message}`;
    }
    this.render();
    if (folders) {
      const open = [...this._folders.keys()].filter(p => this._expanded.has(p));
      await Promise.all(open.map(p => this._load(p, 0)));
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

  private async _load(path: string, offset: number): Promise<void> {
    const prev = this._folders.get(path);
    const state: IFolderState = prev ?? {
      entries: [],
      total: 0,
      next: null,
      loading: true,
      error: null
    };
    state.loading = true;
    this._folders.set(path, state);
    this.render();
    try {
      const page = await requestAPI<IFolderPage>('volumes', {
        path,
        offset,
        limit: PAGE_SIZE
      });
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

  render(): void {
    const root = this.node;
    root.textContent = '';
    if (this._error) {
      root.appendChild(el('div', 'air-error', this._error));
    }
    if (!this._doc) {
      if (!this._error) {
        root.appendChild(el('div', 'air-muted', 'Loading volumes...'));
      }
      return;
    }
    if (this._doc.count === 0) {
      root.appendChild(
        el(
          'div',
          'air-muted',
          `No volumes yet in ${this._doc.root}: create one with %air_volume create catalog.schema.volume`
        )
      );
      return;
    }
    for (const cat of this._doc.catalogs) {
      const catPath = `/Volumes/${cat.name}`;
      root.appendChild(this._row('catalog', cat.name, catPath, 0));
      if (!this._expanded.has(catPath)) {
        continue;
      }
      for (const sch of cat.schemas) {
        const schPath = `${catPath}/${sch.name}`;
        root.appendChild(this._row('schema', sch.name, schPath, 1));
        if (!this._expanded.has(schPath)) {
          continue;
        }
        for (const vol of sch.volumes) {
          root.appendChild(this._row('volume', vol.name, vol.path, 2, null, vol.kind));
          this._children(vol.path, 3);
        }
      }
    }
  }

  private _children(path: string, depth: number): void {
    if (!this._expanded.has(path)) {
      return;
    }
    const state = this._folders.get(path);
    if (!state) {
      return;
    }
    for (const e of state.entries) {
      this.node.appendChild(this._row(e.is_dir ? 'dir' : 'file', e.name, e.path, depth, e.size));
      if (e.is_dir) {
        this._children(e.path, depth + 1);
      }
    }
    const pad = (depth * 14 + 22).toString() + 'px';
    if (state.error) {
      const err = el('div', 'air-error air-tree-note', state.error);
      err.style.marginLeft = pad;
      this.node.appendChild(err);
    }
    if (state.loading) {
      const note = el('div', 'air-muted air-tree-note', 'Loading...');
      note.style.paddingLeft = pad;
      this.node.appendChild(note);
    } else if (state.next !== null) {
      const more = el(
        'button',
        'air-link air-tree-more',
        `Load more (${fmtInt(state.entries.length)} of ${fmtInt(state.total)} shown)`
      );
      more.style.marginLeft = pad;
      more.onclick = () => void this._load(path, state.next ?? state.entries.length);
      this.node.appendChild(more);
    } else if (!state.error && state.entries.length === 0) {
      const note = el('div', 'air-muted air-tree-note', '(empty)');
      note.style.paddingLeft = pad;
      this.node.appendChild(note);
    }
  }

  private _row(
    kind: Kind,
    name: string,
    path: string,
    depth: number,
    size: number | null = null,
    volumeKind = ''
  ): HTMLElement {
    const expandable = kind !== 'file';
    const open = this._expanded.has(path);
    const row = el('div', `air-tree-row air-tree-${kind}`);
    row.setAttribute('role', 'treeitem');
    row.dataset.path = path;
    row.dataset.kind = kind;
    if (expandable) {
      row.setAttribute('aria-expanded', String(open));
      row.setAttribute('aria-busy', String(this._folders.get(path)?.loading ?? false));
    }
    row.style.paddingLeft = `${depth * 14 + 4}px`;

    const caret = el('span', 'air-tree-caret');
    if (expandable) {
      (open ? caretDownIcon : caretRightIcon).element({ container: caret });
      caret.title = open ? 'Collapse' : 'Expand';
      caret.onclick = ev => {
        ev.stopPropagation();
        void this.toggle(path, kind);
      };
    }
    row.appendChild(caret);

    const icon = el('span', 'air-tree-icon');
    const lab = kind === 'file' ? fileIcon : kind === 'volume' ? this.volumeIcon : folderIcon;
    lab.element({ container: icon });
    row.appendChild(icon);

    const label = el('span', 'air-tree-name', name);
    const isPath = kind === 'volume' || kind === 'dir' || kind === 'file';
    label.title = isPath ? `${path}\nclick: copy this path` : path;
    row.appendChild(label);

    if (kind === 'file') {
      row.appendChild(el('span', 'air-tree-size', fmtBytes(size)));
    } else if (kind === 'volume' && volumeKind && volumeKind !== 'embedded') {
      row.appendChild(el('span', 'air-tree-size', volumeKind));
    }

    if (isPath) {
      const actions = el('span', 'air-tree-actions');
      const ls = el('button', 'air-action', 'ls');
      ls.title = `Insert %air_volume ls ${path} into the active notebook`;
      ls.dataset.action = 'ls';
      ls.onclick = ev => {
        ev.stopPropagation();
        this.actions.insertSnippet('ls', path);
      };
      const cp = el('button', 'air-action', 'copy');
      cp.title = `Insert a %%air_copy cell for ${path} into the active notebook`;
      cp.dataset.action = 'copy';
      cp.onclick = ev => {
        ev.stopPropagation();
        this.actions.insertSnippet('copy', path);
      };
      actions.append(ls, cp);
      row.appendChild(actions);
      label.onclick = () => this.actions.copyPath(path);
      if (expandable) {
        label.ondblclick = () => void this.toggle(path, kind);
      }
    } else {
      row.onclick = () => void this.toggle(path, kind);
    }
    return row;
  }

  private _doc: IVolumesDoc | null = null;
  private _error: string | null = null;
  private _initialised = false;
  private _expanded = new Set<string>();
  private _folders = new Map<string, IFolderState>();
}
