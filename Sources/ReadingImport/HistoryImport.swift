import Foundation
import ReadingEvents

/// Reads another app's export into validated events for one reader.
///
/// ```swift
/// let options = ImportOptions(reader: reader, zone: try ZoneID("Asia/Seoul"), importedAt: Timestamp(Date()))
/// let result = try HistoryImport.read(.goodreads, from: url, options: options)
/// print(result.report.text)
/// try store.importHistory(batches: { try result.forEachBatch($0) })   // EventStoreLMDB: all or nothing, re-import adds nothing
/// ```
///
/// A CSV file is read a piece of whole rows at a time, never whole, and the events are staged on
/// disk as they are made, so memory does not grow with the file's text or its events.
///
/// Pure apart from reading the file and staging its events in a private temporary file: the same
/// file and options always give the same envelopes (event IDs included), whatever the machine's
/// time zone.
///
/// `Sendable`: a namespace without cases.
public enum HistoryImport {
    /// Reads `url` as `source`.
    ///
    /// - Throws: ``ImportError``: the file is not that format (`wrongFormat`), is structurally
    ///   broken (`malformed`, with its line), cannot be read, or SQLite failed. Rows the event
    ///   catalog cannot express are not errors: they are in the report's `skipped`.
    public static func read(_ source: ImportSource, from url: URL, options: ImportOptions,
                            progress: ImportProgress? = nil) throws(ImportError) -> ImportResult {
        switch source {
        case .goodreads: try GoodreadsImporter.read(.file(url, .goodreads), options: options, progress: progress)
        case .storygraph: try StoryGraphImporter.read(.file(url, .storygraph), options: options, progress: progress)
        case .koreader: try KOReaderImporter.read(url: url, options: options, progress: progress)
        }
    }

    /// Reads CSV text as `source` (`goodreads` or `storygraph`; KOReader needs a file).
    public static func read(_ source: ImportSource, csv text: String, options: ImportOptions,
                            progress: ImportProgress? = nil) throws(ImportError) -> ImportResult {
        switch source {
        case .goodreads: try GoodreadsImporter.read(.text(text), options: options, progress: progress)
        case .storygraph: try StoryGraphImporter.read(.text(text), options: options, progress: progress)
        case .koreader: throw .wrongFormat(source: .koreader, expected: "a statistics.sqlite3 file, not CSV text")
        }
    }
}
