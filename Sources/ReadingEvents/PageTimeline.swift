/// The page marks of one read-through in the order they happened (not the order they were
/// recorded), and the positions they amount to.
///
/// A mark is a page record (the reader reached page N at an instant) or an explicit correction
/// (the reader moves back to page N). A correction clamps every earlier mark down to its
/// position; the pages credited to a mark are its clamped position minus the previous clamped
/// position, never negative. So a back-dated record slots in between its neighbours and
/// splits their pages, and a correction takes pages back from the marks before it. The decide
/// step and the views use this one type, so they always agree.
///
/// `Sendable`: a value type.
public struct PageTimeline: Hashable, Sendable {
    /// One page mark.
    public struct Mark: Hashable, Sendable {
        /// When it happened.
        public var occurredAt: Timestamp
        /// Orders marks at the same instant (the log position; append order before storing).
        public var sequence: UInt64
        /// The stated position.
        public var position: Int
        /// Whether it is an explicit correction backward.
        public var isCorrection: Bool
        /// Creates a mark.
        public init(occurredAt: Timestamp, sequence: UInt64, position: Int, isCorrection: Bool) {
            self.occurredAt = occurredAt; self.sequence = sequence; self.position = position; self.isCorrection = isCorrection
        }
    }

    /// The marks in (instant, sequence) order.
    public private(set) var marks: [Mark] = []

    /// An empty timeline (a read-through at page 0).
    public init() {}

    /// Inserts a mark in time order; returns its index.
    @discardableResult
    public mutating func insert(_ mark: Mark) -> Int {
        var index = marks.count
        while index > 0, (marks[index - 1].occurredAt, marks[index - 1].sequence) > (mark.occurredAt, mark.sequence) { index -= 1 }
        marks.insert(mark, at: index)
        return index
    }

    /// Each mark's position after later corrections clamp it, in mark order.
    public var effectivePositions: [Int] {
        var result = [Int](repeating: 0, count: marks.count)
        var clamp = Int.max
        for index in marks.indices.reversed() {
            let mark = marks[index]
            if mark.isCorrection { clamp = min(clamp, mark.position) }
            result[index] = min(mark.position, clamp)
        }
        return result
    }

    /// Pages credited to each mark, in mark order: never negative, and summing to the
    /// highest effective position.
    public var credits: [Int] {
        var previous = 0
        return effectivePositions.map { position in
            defer { previous = max(previous, position) }
            return max(0, position - previous)
        }
    }

    /// The position reached: the highest effective position (corrections clamp the marks before
    /// them), the same as ``position(before:)`` after the last mark. In one device's history a
    /// mark never falls below the marks before it, so this is the last mark's effective position;
    /// marks merged from two devices can put a lower mark after a higher one (page 80 at 20:00 on
    /// one, page 50 at 21:00 on the other), and then the higher mark wins.
    public var position: Int { effectivePositions.max() ?? 0 }

    /// The effective position just before an instant (0 when nothing happened before it).
    public func position(before instant: Timestamp) -> Int {
        let effective = effectivePositions
        var result = 0
        for (index, mark) in marks.enumerated() where mark.occurredAt <= instant { result = max(result, effective[index]) }
        return result
    }

    /// The earliest stated position of a page record after an instant, if any.
    public func firstRecord(after instant: Timestamp) -> Mark? {
        marks.first { $0.occurredAt > instant && !$0.isCorrection }
    }
}
