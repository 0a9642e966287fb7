import ArgumentParser
import ReadingEvents

/// `--since` and `--until`: a range of days or instants (`show`'s daily bars, `audit`'s events).
/// A date is the whole day in the zone the command names (from its first to its last microsecond).
struct RangeOptions: ParsableArguments {
    // `.unconditional`: "-1" is read as the value and refused by its rule, not taken for an option.
    @Option(parsing: .unconditional, help: ArgumentHelp(
        "The start of the range: an ISO 8601 date (from the start of that day) or instant; any year 1 ... 9999.",
        valueName: "date-or-instant"), transform: DayOrInstant.parse)
    var since: DayOrInstant?
    @Option(parsing: .unconditional, help: ArgumentHelp(
        "The end of the range: an ISO 8601 date (to the end of that day) or instant; any year 1 ... 9999.",
        valueName: "date-or-instant"), transform: DayOrInstant.parse)
    var until: DayOrInstant?

    func validate() throws {
        if let since, let until, since.instant(in: .utc) > until.instant(in: .utc, endOfDay: true) {
            throw ValidationError("--since \(since) is after --until \(until)")
        }
    }

    /// Whether either bound is given.
    var isSet: Bool { since != nil || until != nil }

    /// Whether `instant` is within the range, dates taken as days in `zone`.
    func contains(_ instant: Timestamp, zone: ZoneID) -> Bool {
        if let since, instant < since.instant(in: zone) { return false }
        if let until, instant > until.instant(in: zone, endOfDay: true) { return false }
        return true
    }
}

/// `--as-of` and `--zone`: "today" for the views (`show`, `report`).
struct TodayOptions: ParsableArguments {
    @Option(parsing: .unconditional, help: ArgumentHelp(
        "\"Today\": an ISO 8601 date or instant, year 1900 ... 2199 (default: see the command's description).",
        valueName: "date-or-instant"), transform: DayOrInstant.parseToday)
    var asOf: DayOrInstant?
    @Option(help: ArgumentHelp(
        "The IANA zone for \"today\" (default: the zone of the reader's last event in canonical order).",
        valueName: "zone"), transform: ZoneID.parse)
    var zone: ZoneID?
}
