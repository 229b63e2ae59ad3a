#include "options.h"

#include <gtest/gtest.h>

using namespace nosync::san;

TEST(Options, DefaultsComeFromTheTable) {
  Options o;
  EXPECT_EQ(o.mode, Mode::Warn);
  EXPECT_EQ(o.format, Format::Text);
  EXPECT_EQ(o.log_path, "stderr");
  EXPECT_EQ(o.min_stall_us, 0u);
  EXPECT_EQ(o.stack_depth, 64u);
  EXPECT_FALSE(o.malloc_is_sync);
}

TEST(Options, ParsesEveryType) {
  Options o;
  ASSERT_EQ(parse_options("mode=error:format=json:log_path=/tmp/x:min_stall_us=250:malloc_is_sync=1:"
                          "suppressions='/a/b:c.supp'",
                          o),
            "");
  EXPECT_EQ(o.mode, Mode::Error);
  EXPECT_EQ(o.format, Format::Json);
  EXPECT_EQ(o.log_path, "/tmp/x");
  EXPECT_EQ(o.min_stall_us, 250u);
  EXPECT_TRUE(o.malloc_is_sync);
  EXPECT_EQ(o.suppressions, "/a/b:c.supp");  // quoted value may hold ':'
}

TEST(Options, LaterKeysOverrideEarlierOnesAndEmptyPartsAreIgnored) {
  Options o;
  ASSERT_EQ(parse_options("::mode=error::mode=report:", o), "");
  EXPECT_EQ(o.mode, Mode::Report);
}

TEST(Options, UnknownKeyIsOneErrorListingValidOptions) {
  Options o;
  const std::string err = parse_options("mode=warn:colour=red", o);
  EXPECT_NE(err.find("unknown option 'colour'"), std::string::npos) << err;
  for (const char* name : {"mode", "format", "log_path", "suppressions", "min_stall_us", "help"})
    EXPECT_NE(err.find(name), std::string::npos) << name << " missing from: " << err;
  EXPECT_EQ(err.find('\n'), std::string::npos) << "one line: " << err;
}

TEST(Options, BadValuesNameTheKeyAndTheExpectedValues) {
  Options o;
  std::string err = parse_options("mode=loud", o);
  EXPECT_NE(err.find("'loud'"), std::string::npos) << err;
  EXPECT_NE(err.find("warn|error|report"), std::string::npos) << err;
  err = parse_options("min_stall_us=-3", o);
  EXPECT_NE(err.find("unsigned integer"), std::string::npos) << err;
  err = parse_options("help=maybe", o);
  EXPECT_NE(err.find("0|1|true|false"), std::string::npos) << err;
  err = parse_options("format", o);
  EXPECT_NE(err.find("not key=value"), std::string::npos) << err;
  err = parse_options("stack_depth=0", o);
  EXPECT_NE(err.find("1..128"), std::string::npos) << err;
}

TEST(Options, HelpListsEveryOptionWithTypeAndDefault) {
  const std::string help = options_help();
  std::string names = option_names();
  std::size_t start = 0;
  int count = 0;
  while (start < names.size()) {
    std::size_t comma = names.find(", ", start);
    std::string name = names.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    EXPECT_NE(help.find("  " + name + " ("), std::string::npos) << name;
    ++count;
    start = comma == std::string::npos ? names.size() : comma + 2;
  }
  EXPECT_GE(count, 10);
  EXPECT_NE(help.find("mode (Mode, default warn)"), std::string::npos) << help;
  EXPECT_NE(help.find("min_stall_us (Int, default 0)"), std::string::npos) << help;
}
