import XCTest
final class PlaceholderSuplashJSONTests: XCTestCase { func testPlaceholder() {} }
