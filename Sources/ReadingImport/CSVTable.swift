import Foundation
import SwiftCSV

/// A CSV file read with SwiftCSV, row by row, with the line each row starts on and columns by
/// header name.
///
/// SwiftCSV strips a UTF-8 byte-order mark, treats CRLF as one line break, keeps line breaks in
/// quoted fields and throws on a stray quote; it does not say where. This reader adds the line
/// numbers (counted from the line breaks of the rows before), refuses an unterminated quote
/// (SwiftCSV keeps it as text to the end of the file) before any row is read, and rows whose
/// field count differs from the header's. Rows are handed over as they are parsed; none is kept.
struct CSVTable {
    /// A data row: its fields and the line it starts on (the header is line 1).
    struct Row {
        let line: Int
        let fields: [String]
    }

    let header: [String]
    private let index: [String: Int]

    init(header: [String]) {
        self.header = header
        var index: [String: Int] = [:]
        for (i, name) in header.enumerated() where index[name] == nil { index[name] = i }
        self.index = index
    }

    /// Parses `text`: `header` checks the table the first row makes, then `body` gets each data
    /// row (blank lines left out) with the number of lines of the file. The first error stops
    /// the reading: a quote not closed before the end of the file (found first, by a scan of the
    /// bytes), bad quoting, a row with another field count than the header, or what a closure throws.
    static func enumerate(_ text: String, header check: (CSVTable) throws(ImportError) -> Void,
                          rows body: (CSVTable, Row, _ lines: Int) throws(ImportError) -> Void) throws(ImportError) {
        let text = text.hasPrefix("\u{FEFF}") ? String(text.dropFirst()) : text
        // Every quote of valid CSV is paired (open/close, or "" inside a field); the scan also
        // counts lines as `lineBreaks(in:)` does.
        var inQuotes = false, afterCR = false, lineCount = 1, rowStart = 1
        for byte in text.utf8 {
            switch byte {
            case 0x0A:
                if !afterCR { lineCount += 1 }
                afterCR = false
                if !inQuotes { rowStart = lineCount }
            case 0x0D:
                lineCount += 1
                afterCR = true
                if !inQuotes { rowStart = lineCount }
            default:
                afterCR = false
                if byte == UInt8(ascii: "\"") { inQuotes.toggle() }
            }
        }
        if inQuotes { throw .malformed(line: rowStart, detail: "a quoted field is not closed before the end of the file") }
        var table: CSVTable?
        var failure: ImportError?
        var line = 1
        do {
            let csv = try EnumeratedCSV(string: text, delimiter: .comma, loadColumns: false, rowLimit: 0)
            // SwiftCSV's callback is declared escaping but is called only during the call.
            try withoutActuallyEscaping(check) { check in try withoutActuallyEscaping(body) { body in
            try csv.enumerateAsArray(startAt: 0, rowLimit: nil) { fields in
                let row = Row(line: line, fields: fields)
                // A row ends with one line break; breaks inside quoted fields move the next row down.
                line += 1 + fields.reduce(0) { $0 + Self.lineBreaks(in: $1) }
                guard failure == nil else { return }
                do throws(ImportError) {
                    guard let table else {
                        let made = CSVTable(header: fields.map { $0.trimmingCharacters(in: .whitespaces) })
                        table = made
                        try check(made)
                        return
                    }
                    if fields.count == 1, fields[0].trimmingCharacters(in: .whitespaces).isEmpty { return } // blank line
                    guard fields.count == table.header.count else {
                        throw .malformed(line: row.line, detail: "\(fields.count) fields where the header has \(table.header.count)")
                    }
                    try body(table, row, lineCount)
                } catch {
                    failure = error
                }
            }
            } }
        } catch {
            throw failure ?? .malformed(line: line, detail: "bad quoting in the row starting here (\(ReportText.printable("\(error)")))")
        }
        if let failure { throw failure }
        guard table != nil else { throw .malformed(line: 1, detail: "the file is empty; a header row is expected") }
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
