/**
 * Printing a benchmark's results as an aligned text table.
 */

/** A column: the row's key, its title, and which side its cells align to. */
export type Column<Row> = readonly [key: keyof Row, title: string, align: "left" | "right"]

/** Prints `rows` under the columns' titles, each column as wide as its widest cell; a missing cell is blank. */
export const printTable = <Row extends Partial<Record<keyof Row, string>>>(
  columns: ReadonlyArray<Column<Row>>,
  rows: ReadonlyArray<Row>
): void => {
  const cell = (row: Row, key: keyof Row): string => row[key] ?? ""
  const widths = columns.map(([key, title]) => Math.max(title.length, ...rows.map((row) => cell(row, key).length)))
  const line = (cells: ReadonlyArray<string>) =>
    cells.map((text, i) => columns[i]![2] === "right" ? text.padStart(widths[i]!) : text.padEnd(widths[i]!))
      .join("  ").trimEnd()
  console.log(line(columns.map(([, title]) => title)))
  console.log(line(widths.map((width) => "-".repeat(width))))
  for (const row of rows) console.log(line(columns.map(([key]) => cell(row, key))))
}

/** Prints `rows` as a Markdown table, padded as `printTable` pads them, so it reads as well in a terminal. */
export const printMarkdownTable = <Row extends Partial<Record<keyof Row, string>>>(
  columns: ReadonlyArray<Column<Row>>,
  rows: ReadonlyArray<Row>
): void => {
  const cell = (row: Row, key: keyof Row): string => row[key] ?? ""
  const widths = columns.map(([key, title]) => Math.max(3, title.length, ...rows.map((row) => cell(row, key).length)))
  const line = (cells: ReadonlyArray<string>) =>
    `| ${
      cells.map((text, i) => columns[i]![2] === "right" ? text.padStart(widths[i]!) : text.padEnd(widths[i]!))
        .join(" | ")
    } |`
  console.log(line(columns.map(([, title]) => title)))
  console.log(
    `|${
      widths.map((width, i) => columns[i]![2] === "right" ? `${"-".repeat(width + 1)}:` : "-".repeat(width + 2))
        .join("|")
    }|`
  )
  for (const row of rows) console.log(line(columns.map(([key]) => cell(row, key))))
}
