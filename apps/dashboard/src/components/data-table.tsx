import type { ReactNode } from "react";

/** A column: its heading (read out only, when `hideLabel`: an actions column) and a row's cell. */
export interface Column<T> {
  label: string;
  hideLabel?: boolean;
  className?: string;
  cell: (row: T) => ReactNode;
}

/**
 * A table that turns into a stack of cards on a phone (styles.css, `stack-on-phone`): each cell
 * carries its column's label as `data-label`, so a heading is written once, here.
 */
export function DataTable<T>({
  rows,
  rowKey,
  columns,
  caption,
}: {
  rows: T[];
  rowKey: (row: T) => string;
  columns: Column<T>[];
  caption?: string;
}) {
  return (
    <div className="table-wrap">
      <table className="stack-on-phone">
        {caption ? <caption className="visually-hidden">{caption}</caption> : null}
        <thead>
          <tr>
            {columns.map((c) => (
              <th key={c.label} scope="col">
                {c.hideLabel ? <span className="visually-hidden">{c.label}</span> : c.label}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.map((row) => (
            <tr key={rowKey(row)}>
              {columns.map((c) => (
                <td key={c.label} data-label={c.label} className={c.className}>
                  {c.cell(row)}
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
