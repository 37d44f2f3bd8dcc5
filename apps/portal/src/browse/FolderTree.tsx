import { useState } from 'react';
import { useQuery } from '@tanstack/react-query';
import { Link } from 'react-router';
import { api } from '../api';
import { browseHref } from '../format';
import { dropTarget } from './dnd';

/**
 * The folder tree: the path to the current collection is open, any folder expands on demand (its
 * first 200 subcollections; the table pages through the rest). Folders accept dragged entries.
 */
export function FolderTree({
  current,
  onDropPaths,
}: {
  current: string;
  onDropPaths: (to: string, from: string[]) => void;
}) {
  return (
    <nav aria-label="Folder tree" className="tree">
      <ul role="tree" aria-label="Folders">
        <Node path="/" name="Root" current={current} onDropPaths={onDropPaths} depth={0} />
      </ul>
    </nav>
  );
}

function Node({
  path,
  name,
  current,
  onDropPaths,
  depth,
}: {
  path: string;
  name: string;
  current: string;
  onDropPaths: (to: string, from: string[]) => void;
  depth: number;
}) {
  const onTheWay = path === '/' || current === path || current.startsWith(`${path}/`);
  const [open, setOpen] = useState<boolean | null>(null);
  const expanded = open ?? onTheWay;
  const children = useQuery({
    queryKey: ['children', path, 'tree'],
    queryFn: ({ signal }) => api.listChildren({ path, limit: 200 }, signal),
    enabled: expanded,
  });
  const folders = children.data?.items.filter((e) => e.kind === 'collection') ?? [];
  return (
    <li role="treeitem" aria-expanded={expanded} aria-selected={current === path}>
      <div className="tree-row" style={{ paddingLeft: depth * 12 }} {...dropTarget(path, onDropPaths)}>
        <button
          type="button"
          className="twisty"
          aria-label={expanded ? `Collapse ${name}` : `Expand ${name}`}
          onClick={() => setOpen(!expanded)}
        >
          {expanded ? '▾' : '▸'}
        </button>
        <Link to={browseHref(path)} aria-current={current === path ? 'page' : undefined} title={path}>
          {name}
        </Link>
      </div>
      {expanded && folders.length > 0 && (
        <ul role="group">
          {folders.map((f) => (
            <Node
              key={f.id}
              path={f.path}
              name={f.name}
              current={current}
              onDropPaths={onDropPaths}
              depth={depth + 1}
            />
          ))}
        </ul>
      )}
      {expanded && children.error && (
        <p className="muted tree-note" style={{ paddingLeft: depth * 12 + 24 }}>
          not readable
        </p>
      )}
    </li>
  );
}
