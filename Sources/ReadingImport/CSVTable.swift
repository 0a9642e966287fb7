import Foundation
import SwiftCSV

/// A CSV file read with SwiftCSV, with the line each row starts on and columns by header name.
///
/// SwiftCSV strips a UTF-8 byte-order mark, treats CRLF as one line break, keeps line breaks in
/// quoted fields and throws on a stray quote; it does not say where. This wrapper adds the line
/// numbers (counted from the line breaks of the rows before), refuses an unterminated quote
/// (SwiftCSV keeps it as text to the end of the file) and rows whose field count differs from
/// the header's.
struct CSVTable {
    /// A data row: its fields and the line it starts on (the header is line 1).
    struct Row {
        let line: Int
        let fields: [String]
    }

    let header: [String]
    let rows: [Row]
    private let index: [String: Int]

    init(text: String) throws(ImportError) {
        var text = text
        if text.hasPrefix("\u{FEFF}") { text.removeFirst() }
        var parsed: [Row] = []
        var line = 1
        do {
            let csv = try EnumeratedCSV(string: text, delimiter: .comma, loadColumns: false, rowLimit: 0)
            try csv.enumerateAsArray(startAt: 0, rowLimit: nil) { fields in
                parsed.append(Row(line: line, fields: fields))
                // A row ends with one line break; breaks inside quoted fields move the next row down.
                line += 1 + fields.reduce(0) { $0 + Self.lineBreaks(in: $1) }
            }
        } catch {
            throw .malformed(line: line, detail: "bad quoting in the row starting here (\(ReportText.printable("\(error)")))")
        }
        // Every quote of valid CSV is paired (open/close, or "" inside a field).
        if text.utf8.reduce(0, { $0 + ($1 == UInt8(ascii: "\"") ? 1 : 0) }) % 2 == 1 {
            throw .malformed(line: parsed.last?.line ?? 1, detail: "a quoted field is not closed before the end of the file")
        }
        guard let first = parsed.first else { throw .malformed(line: 1, detail: "the file is empty; a header row is expected") }
        header = first.fields.map { $0.trimmingCharacters(in: .whitespaces) }
        var rows: [Row] = []
        for row in parsed.dropFirst() {
            if row.fields.count == 1, row.fields[0].trimmingCharacters(in: .whitespaces).isEmpty { continue } // blank line
            guard row.fields.count == header.count else {
                throw .malformed(line: row.line, detail: "\(row.fields.count) fields where the header has \(header.count)")
            }
            rows.append(row)
        }
        self.rows = rows
        var index: [String: Int] = [:]
        for (i, name) in header.enumerated() where index[name] == nil { index[name] = i }
        self.index = index
    }

    /// The line breaks of a field as a text editor counts lines: LF, CR LF (one Character) and a
    /// lone CR; U+2028, U+2029, NEL, VT and FF are characters inside a line, though Swift calls
    /// them newlines.
    static func lineBreaks(in field: String) -> Int {
        field.reduce(0) { $0 + ($1 == "\n" || $1 == "\r\n" || $1 == "\r" ? 1 : 0) }
    }

    /// Whether every name is a column.
    func hasColumns(_ names: [String]) -> Bool { names.allSatisfy { index[$0] != nil } }

    /// The trimmed value of column `name` in `row`, or "" when the column is absent.
    func value(_ name: String, in row: Row) -> String {
        guard let i = index[name] else { return "" }
        return row.fields[i].trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The value as it is (line breaks inside kept), for reviews and notes.
    func rawValue(_ name: String, in row: Row) -> String {
        guard let i = index[name] else { return "" }
        return row.fields[i]
    }

    /// Reads a file as UTF-8 text; anything else is not a CSV export of `source`.
    static func read(_ url: URL, as source: ImportSource) throws(ImportError) -> String {
        let data: Data
        do { data = try Data(contentsOf: url) } catch { throw .unreadable(path: url.path, detail: "\(error.localizedDescription)") }
        guard let text = String(data: data, encoding: .utf8) else {
            throw .wrongFormat(source: source, expected: "a CSV export in UTF-8 text; \(url.lastPathComponent) is not UTF-8 text")
        }
        return text
    }
}
