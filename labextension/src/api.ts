/**
 * The server extension's REST API (`<base_url>/air/api/...`) and the documents it answers.
 *
 * Every call goes through `ServerConnection.makeRequest`, which adds the token or login cookie and
 * the `X-XSRFToken` header for state-changing calls. Errors carry the server's own message.
 */
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

export interface IVolumeRef {
  name: string;
  path: string;
  kind: string;
}

export interface IVolumesDoc {
  root: string;
  kind: string;
  count: number;
  catalogs: {
    name: string;
    schemas: { name: string; volumes: IVolumeRef[] }[];
  }[];
}

export interface IEntry {
  name: string;
  path: string;
  is_dir: boolean;
  size: number | null;
  mtime: number | null;
}

export interface IFolderPage {
  path: string;
  offset: number;
  limit: number;
  total: number;
  next_offset: number | null;
  entries: IEntry[];
}

export interface ICacheStats {
  root?: string;
  entries?: number;
  bytes?: number;
  limit?: number | null;
  reserve?: number;
  free_disk?: number;
  hits?: number;
  misses?: number;
  bytes_hit?: number;
  bytes_fetched?: number;
  evictions?: number;
  hit_rate?: number;
  updated?: number;
}

export interface ILoaderStats {
  steps?: number;
  wait_share?: number;
  epoch?: number;
  num_workers?: number;
  done?: boolean;
}

export interface ICacheDoc {
  cache: ICacheStats | null;
  loader: ILoaderStats | null;
  removed?: number;
  /** entries not removed because a reader was handed their path in the last pin window */
  kept?: number;
  summary?: string;
}

export interface IJob {
  name: string;
  job: string;
  kind: 'copy' | 'export' | string;
  dest?: string;
  state: string;
  progress: number | null;
  stale: boolean;
  updated?: number;
  started?: number;
  finished?: number | null;
  // copy
  files_total?: number;
  files_done?: number;
  copied?: number;
  skipped?: number;
  failed?: number;
  bytes_done?: number;
  bytes_total?: number;
  files_per_second?: number;
  eta?: number | null;
  // export
  rows?: number;
  files?: number;
  tasks?: number;
  tasks_done?: number;
  bytes_read?: number;
}

export interface ISave {
  step: number;
  state: 'staging' | 'uploading' | 'committed' | 'failed' | string;
  started?: number;
  finished?: number | null;
  bytes?: number;
  seconds?: number;
  mb_per_s?: number;
  blocked_s?: number;
  error?: string | null;
}

export interface ICheckpointFolder {
  name: string;
  directory: string;
  keep?: number | null;
  latest: number | null;
  steps: number[];
  pending: string[];
  saves: ISave[];
  updated?: number;
  error: string | null;
}

/** A failed API call: `status` is the HTTP status (0 when the server could not be reached). */
export class ApiError extends Error {
  constructor(
    message: string,
    readonly status: number
  ) {
    super(message);
  }
}

/** Call `air/api/<endpoint>` (with an optional query) and return the parsed JSON answer. */
export async function requestAPI<T>(
  endpoint: string,
  query: Record<string, string | number> = {},
  init: RequestInit = {}
): Promise<T> {
  const settings = ServerConnection.makeSettings();
  const params = Object.entries(query)
    .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(String(v))}`)
    .join('&');
  const url =
    URLExt.join(settings.baseUrl, 'air/api', endpoint) + (params ? `?${params}` : '');
  let response: Response;
  try {
    response = await ServerConnection.makeRequest(url, init, settings);
  } catch (error) {
    throw new ApiError(`cannot reach the Jupyter server: ${error}`, 0);
  }
  const text = await response.text();
  let data: unknown = null;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = null;
    }
  }
  if (!response.ok) {
    const sent = (data as { message?: unknown } | null)?.message;
    const message =
      (typeof sent === 'string' && sent) ||
      response.statusText ||
      'request failed';
    const hint =
      response.status === 404 && !data
        ? ' (is the air_magics server extension enabled? `jupyter server extension list`)'
        : '';
    throw new ApiError(`${response.status}: ${message}${hint}`, response.status);
  }
  return data as T;
}
