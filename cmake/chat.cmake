# chat/ module: the Jinja2-compatible template engine and chat rendering, plus its test suite.
# Kept in its own file so the module can be wired with one include() from the top-level CMakeLists.
file(GLOB tf_chat_srcs CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/chat/*.cpp
     ${PROJECT_SOURCE_DIR}/src/chat/jinja/*.cpp)
add_library(tf_chat STATIC ${tf_chat_srcs})
target_include_directories(tf_chat PUBLIC ${PROJECT_SOURCE_DIR}/src)
target_link_libraries(tf_chat PUBLIC tf_base nlohmann_json::nlohmann_json)

if(TF_BUILD_TESTS AND NOT TF_FUZZ)
  include(GoogleTest)
  enable_testing()
  file(GLOB tf_chat_tests CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/tests/chat/*_test.cpp)
  if(tf_chat_tests)
    add_executable(chat_test ${tf_chat_tests})
    target_link_libraries(chat_test PRIVATE tf_chat GTest::gtest_main)
    target_compile_definitions(chat_test PRIVATE TF_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
    target_include_directories(chat_test PRIVATE ${PROJECT_SOURCE_DIR}/tests)
    set_target_properties(chat_test PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/tests)
    gtest_discover_tests(chat_test WORKING_DIRECTORY ${PROJECT_SOURCE_DIR} DISCOVERY_TIMEOUT 60)
  endif()
endif()

# fuzz/CMakeLists.txt links its targets with tf_tokenizer and tf_checkpoint only; jinja_fuzz also
# needs tf_chat. Deferred because fuzz/ is added after this file is included.
if(TF_FUZZ)
  cmake_language(DEFER DIRECTORY ${PROJECT_SOURCE_DIR} CALL tf_chat_link_fuzzer)
  function(tf_chat_link_fuzzer)
    if(TARGET jinja_fuzz)
      target_link_libraries(jinja_fuzz PRIVATE tf_chat)
    endif()
  endfunction()
endif()
