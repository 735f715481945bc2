import Foundation

/// Turning a JSON value read from an import or change set into a payload, with the value's
/// position in errors.
enum ImportValue {
    /// The payload `compact` (read at `mark` of `json`, nothing read since) stands for.
    static func payload(
        _ compact: [UInt8], at mark: JSONStream.Mark, in json: JSONStream, foundationCheck: Bool = true
    ) throws(JSONInputError) -> Data {
        do throws(PayloadCoding.ValueProblem) {
            return try PayloadCoding.payload(fromCompactJSON: compact, foundationCheck: foundationCheck)
        } catch {
            switch error {
            case .invalidBase64:
                throw json.error("the \"$base64\" value is not valid base64", at: mark)
            case .rejectedByFoundation:
                throw json.error("JSONSerialization refused this value (number out of range?)", at: mark)
            }
        }
    }
}
