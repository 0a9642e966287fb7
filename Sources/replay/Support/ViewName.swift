import ArgumentParser

/// The persisted views, as `rebuild --view` values.
enum ViewName: String, ExpressibleByArgument, CaseIterable {
    case books, days, bookDays, months, buckets, runs, readers, goals
}
