import Foundation
import SwiftCSV

/// A CSV file read with SwiftCSV, row by row, with the line each row starts on and columns by
/// header name.
///
/// SwiftCSV strips a UTF-8 byte-order mark, treats CRLF as one line break, keeps line breaks in
/// quoted fields and throws on a stray quote; it does not say where. This reader adds the line
/// numbers (counted from the line breaks of the rows before), refuses an unterminated quote
/// (SwiftCSV keeps it as text to the end of the file) before any row is read, and rows whose
/// field count differs from the header's. Rows are handed over as they are parsed; none is kept,
/// and a file is read a piece of whole rows at a time (``Source``), never whole.
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

    /// Where CSV comes from: text in memory, or a file read in pieces of whole rows.
    ///
    /// Not `Sendable`-relevant: a local value of one import.
    enum Source {
        /// Text in memory (``HistoryImport/read(_:csv:options:progress:)``).
        case text(String)
        /// A file, read ``chunkBytes`` at a time, never whole; `source` names the format for errors.
        case file(URL, ImportSource)
    }

    /// How many bytes of a file are read at a time; a piece handed to the parser ends at the last
    /// row break of what was read (a line break outside quotes), so it is about this size unless
    /// one quoted field is longer.
    static let chunkBytes = 1 << 20

    /// A source opened for reading: text, or a descriptor of a regular file at its start (a pipe
    /// or FIFO is copied first to a private temporary file, unlinked at once, since it is read twice).
    ///
    /// Not `Sendable`: one import's reader.
    final class Opened {
        let source: Source
        let descriptor: Int32

        init(_ source: Source) throws(ImportError) {
            self.source = source
            guard case .file(let url, _) = source else { descriptor = -1; return }
            let input = open(url.path, O_RDONLY | O_CLOEXEC)
            guard input >= 0 else { throw .unreadable(path: url.path, detail: String(cString: strerror(errno))) }
            var info = stat()
            if fstat(input, &info) == 0, info.st_mode & S_IFMT == S_IFREG { descriptor = input; return }
            defer { close(input) }
            let spool = FileManager.default.temporaryDirectory.appendingPathComponent("reading-import-csv-\(UUID().uuidString)").path
            let copy = open(spool, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            guard copy >= 0 else { throw .unreadable(path: url.path, detail: "cannot create a temporary copy: \(String(cString: strerror(errno)))") }
            unlink(spool)
            var block = [UInt8](repeating: 0, count: CSVTable.chunkBytes)
            while true {
                let n = block.withUnsafeMutableBytes { read(input, $0.baseAddress, $0.count) }
                if n < 0, errno == EINTR { continue }
                guard n >= 0 else { close(copy); throw .unreadable(path: url.path, detail: String(cString: strerror(errno))) }
                if n == 0 { break }
                var done = 0
                while done < n {
                    let w = block.withUnsafeBytes { write(copy, $0.baseAddress! + done, n - done) }
                    guard w > 0 else { close(copy); throw .unreadable(path: url.path, detail: "cannot write a temporary copy: \(String(cString: strerror(errno)))") }
                    done += w
                }
            }
            descriptor = copy
        }

        deinit { if descriptor >= 0 { close(descriptor) } }
    }

    /// Calls `body` with the bytes of `opened` in pieces, each ending after a line feed outside
    /// quotes (the last piece: at the end of the input), so every piece holds whole rows. A UTF-8
    /// byte-order mark at the start is left out. Memory: one piece and one read buffer.
    static func forEachPiece(of opened: Opened, _ body: ([UInt8]) throws(ImportError) -> Void) throws(ImportError) {
        switch opened.source {
        case .text(let text):
            var bytes = Array(text.utf8)
            if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { bytes.removeFirst(3) }
            try body(bytes)
        case .file(let url, _):
            let descriptor = opened.descriptor
            guard lseek(descriptor, 0, SEEK_SET) == 0 else { throw .unreadable(path: url.path, detail: String(cString: strerror(errno))) }
            var pending: [UInt8] = []
            var block = [UInt8](repeating: 0, count: chunkBytes)
            var inQuotes = false, scanned = 0, first = true
            while true {
                let n = block.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
                if n < 0 {
                    if errno == EINTR { continue }
                    throw .unreadable(path: url.path, detail: String(cString: strerror(errno)))
                }
                if n == 0 { break }
                pending.append(contentsOf: block[0..<n])
                if first, pending.count >= 3 {
                    if pending.starts(with: [0xEF, 0xBB, 0xBF]) { pending.removeFirst(3) }
                    first = false
                    scanned = 0
                }
                guard !first else { continue }
                // The last line feed outside quotes in what is pending (quotes toggle as in the scan).
                var cut = -1
                for i in scanned..<pending.count {
                    let byte = pending[i]
                    if byte == UInt8(ascii: "\"") { inQuotes.toggle() } else if byte == 0x0A, !inQuotes { cut = i }
                }
                scanned = pending.count
                guard cut >= 0 else { continue }
                try body(Array(pending[...cut]))
                pending.removeFirst(cut + 1)
                scanned = pending.count
            }
            if first, pending.starts(with: [0xEF, 0xBB, 0xBF]) { pending.removeFirst(3) }
            if !pending.isEmpty { try body(pending) }
        }
    }

    /// The UTF-8 text of one piece, or the error that says the file is not a CSV export.
    private static func text(of piece: [UInt8], from source: Source) throws(ImportError) -> String {
        guard case .file(let url, let format) = source else { return String(decoding: piece, as: UTF8.self) }
        guard let text = String(validating: piece, as: UTF8.self) else {
            throw .wrongFormat(source: format, expected: "a CSV export in UTF-8 text; \(url.lastPathComponent) is not UTF-8 text")
        }
        return text
    }

    /// Parses `source`: `header` checks the table the first row makes, then `body` gets each data
    /// row (blank lines left out) with the number of lines of the file. The first error stops
    /// the reading: text that is not UTF-8 or a quote not closed before the end of the file
    /// (both found first, by a scan of the bytes, before any row is handed over), bad quoting, a
    /// row with another field count than the header, or what a closure throws.
    ///
    /// A file is read twice, a piece at a time (``forEachPiece(of:_:)``; a pipe is copied to a private unlinked file first), and never held whole:
    /// memory does not grow with the file.
    static func enumerate(_ source: Source, header check: (CSVTable) throws(ImportError) -> Void,
                          rows body: (CSVTable, Row, _ lines: Int) throws(ImportError) -> Void) throws(ImportError) {
        // Every quote of valid CSV is paired (open/close, or "" inside a field); the scan also
        // counts lines as `lineBreaks(in:)` does.
        let opened = try Opened(source)
        var inQuotes = false, afterCR = false, lineCount = 1, rowStart = 1
        try forEachPiece(of: opened) { piece throws(ImportError) in
            _ = try Self.text(of: piece, from: source)
            for byte in piece {
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
        }
        if inQuotes { throw .malformed(line: rowStart, detail: "a quoted field is not closed before the end of the file") }
        var table: CSVTable?
        var failure: ImportError?
        var line = 1
        try forEachPiece(of: opened) { piece throws(ImportError) in
            guard failure == nil else { return }
            let chunk = try Self.text(of: piece, from: source)
            do {
                let csv = try EnumeratedCSV(string: chunk, delimiter: .comma, loadColumns: false, rowLimit: 0)
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
                failure = failure ?? .malformed(line: line, detail: "bad quoting in the row starting here (\(ReportText.printable("\(error)")))")
            }
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
}
