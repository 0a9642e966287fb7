import ArgumentParser
import EventStoreLMDB

/// `replay rebuild --jobs N`: the rebuild's fold workers, a whole number in
/// ``ReadingStore/rebuildJobsRange``.
struct RebuildJobs: CheckedArgument {
    /// The number of fold workers.
    let count: Int

    static func parse(_ text: String) throws -> RebuildJobs {
        let range = ReadingStore.rebuildJobsRange
        guard let count = Int(text), range.contains(count) else {
            throw ValidationError("not a number of fold workers in \(range.lowerBound) ... \(range.upperBound)")
        }
        return RebuildJobs(count: count)
    }
}
