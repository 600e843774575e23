/**
 * Keyed DOM updates without a framework: a view describes what it wants (key + signature per
 * node), nodes whose signature is unchanged are reused as they are, and the parent's children are
 * moved only where the order differs. An unchanged description touches no DOM node, so hover,
 * focus and selection survive a refresh.
 */

/** One wanted node: `key` names it across updates, `sig` is everything its rendering depends on. */
export interface IKeyed<T> {
  key: string;
  sig: string;
  item: T;
}

/** Make `parent`'s children exactly `nodes`, in order, inserting, moving or removing only what differs. */
export function syncChildren(parent: Node, nodes: readonly Node[]): void {
  let cursor = parent.firstChild;
  for (const node of nodes) {
    if (node === cursor) {
      cursor = cursor.nextSibling;
    } else {
      parent.insertBefore(node, cursor);
    }
  }
  while (cursor) {
    const next: ChildNode | null = cursor.nextSibling;
    parent.removeChild(cursor);
    cursor = next;
  }
}

/** Rendered nodes by key; `update` re-renders only the items whose signature changed. */
export class KeyedNodes<T> {
  constructor(private readonly _render: (item: T) => HTMLElement) {}

  /** The nodes for `wanted`, in its order; nodes of keys no longer wanted are forgotten. */
  nodes(wanted: readonly IKeyed<T>[]): HTMLElement[] {
    const next = new Map<string, { sig: string; node: HTMLElement }>();
    const out = wanted.map(({ key, sig, item }) => {
      const known = this._nodes.get(key);
      const node = known && known.sig === sig ? known.node : this._render(item);
      next.set(key, { sig, node });
      return node;
    });
    this._nodes = next;
    return out;
  }

  /** Sync `parent`'s children to `wanted` (see `syncChildren`). */
  update(parent: Node, wanted: readonly IKeyed<T>[]): void {
    syncChildren(parent, this.nodes(wanted));
  }

  private _nodes = new Map<string, { sig: string; node: HTMLElement }>();
}
