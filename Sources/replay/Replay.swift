import ArgumentParser
import EventStoreLMDB
import Foundation
import Projections
import ReadingEvents

/// `replay`: rebuild, verify, audit, show, export, import and back up a reading-history store.
@main
struct Replay: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay",
        abstract: "Rebuild, verify, audit, show, export, import and back up a reading-history store.",
        discussion: """
            Every subcommand takes --store PATH. Without it, the store is $READING_STORE, or \
            ./reading-store when that is not set. Exit status: 0 success, 64 usage error, 1 failure.
            """,
        version: "0.1.0",
        subcommands: [Demo.self, Rebuild.self, Verify.self, Audit.self, Show.self, Export.self, Import.self, ImportFrom.self,
                      Backup.self, Stats.self, Report.self, Sync.self, Vector.self, Register.self, Partner.self]
    )
}

/// The option every subcommand shares.
struct StoreOptions: ParsableArguments {
    @Option(name: .long, help: "The store directory (default: $READING_STORE, else ./reading-store).")
    var store: String?

    var url: URL {
        URL(fileURLWithPath: store ?? ProcessInfo.processInfo.environment["READING_STORE"] ?? "reading-store")
    }

    /// Opens an existing store; a missing directory, or one without a `data.mdb`, is a failure
    /// ("no store at PATH") that writes nothing, not a new store.
    ///
    /// - Parameter readOnly: open without writing anything (`verify`, `backup`). Otherwise the
    ///   store is opened for writing (views that lag the log are caught up), and a store on
    ///   read-only media, or one this user may not write, is opened read-only instead: the
    ///   commands that only read still work there.
    func openExisting(readOnly: Bool = false) throws -> ReadingStore {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), isDirectory.boolValue,
              FileManager.default.fileExists(atPath: url.appendingPathComponent("data.mdb").path) else {
            throw ReplayError("no store at \(url.path) (create one with `replay demo` or `replay import`)")
        }
        if !readOnly {
            do {
                return try ReadingStore.open(at: url)
            } catch let error as LMDBError where error.code == EROFS || error.code == EACCES {
                // Read-only media or permissions: fall through to a read-only open.
            }
        }
        return try ReadingStore.open(at: url, options: LMDBEnvironmentOptions(readOnly: true))
    }
}

/// A failure with one clear line for stderr (exit status 1); text from the store or a file in it is
/// shown with control characters escaped (see ``printable(_:)``).
struct ReplayError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = printable(description) }
}

/// Checks the value of a date option: an ISO 8601 date or instant whose year is in `years`
/// (``Limits/years`` for a "today", `--as-of`; any calendar year for a range that is clamped to
/// the history, `show --since/--until`); the `ValidationError` names the option, the value and
/// the rule.
func checkDateOption(_ name: String, _ value: String, years: ClosedRange<Int> = Limits.years) throws {
    let yearText = value.prefix { $0.isASCII && $0.isNumber }
    if value.dropFirst(yearText.count).first == "-", let year = Int(yearText), yearText.count > 4 || !years.contains(year) {
        throw ValidationError("\(name) \(value): the year \(year) is outside \(years.lowerBound) ... \(years.upperBound)")
    }
    guard Timestamp(iso8601: value) != nil || (try? LocalDate(iso: value)) != nil else {
        throw ValidationError("\(name) \"\(value)\" is not an ISO 8601 date (2026-03-01) or instant (2026-03-01T09:00:00+09:00)")
    }
}

/// Parses an ISO 8601 date (`2026-03-01`, start of that day in `zone`) or instant.
func parseInstant(_ text: String, zone: ZoneID, endOfDay: Bool = false) throws -> Timestamp {
    if let instant = Timestamp(iso8601: text) { return instant }
    guard let day = try? LocalDate(iso: text) else {
        throw ValidationError("\"\(text)\" is not an ISO 8601 date (2026-03-01) or instant (2026-03-01T09:00:00+09:00)")
    }
    let tz = zone.timeZone
    let target = endOfDay ? day.adding(days: 1) : day
    let naive = Int64(target.dayNumber) * 86_400
    let offset = Int64(tz.secondsFromGMT(for: Date(timeIntervalSince1970: TimeInterval(naive))))
    return Timestamp(microseconds: (naive - offset) * 1_000_000 - (endOfDay ? 1 : 0))
}

/// Writes to stderr.
func warn(_ text: String) { FileHandle.standardError.write(Data((text + "\n").utf8)) }

/// Whether stderr is a terminal (progress bars only then).
var stderrIsTerminal: Bool { isatty(2) == 1 }

/// Seconds since `start`.
func seconds(since start: ContinuousClock.Instant) -> Double {
    let d = ContinuousClock.now - start
    return Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
}

/// Prints a JSON value (sorted keys) to stdout.
func printJSON(_ value: Any) throws {
    let data = try JSONSerialization.data(withJSONObject: value, options: [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes])
    FileHandle.standardOutput.write(data)
    FileHandle.standardOutput.write(Data("\n".utf8))
}
