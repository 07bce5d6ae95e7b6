# tf_dashboard_assets(TARGET): adds to TARGET the generated source holding the dashboard's files
# (src/server/dashboard/ and Debian's libjs-chart.js), rebuilt when any of them changes. Used by
# tf_server and by the fuzz build's copy of the server module.
function(tf_dashboard_assets target)
  find_file(TF_CHARTJS chart.min.js PATHS /usr/share/javascript/chart.js NO_DEFAULT_PATH)
  set(chart "${TF_CHARTJS}")
  if(NOT chart)
    message(WARNING "libjs-chart.js is not installed (run scripts/setup): /dashboard will have no charts")
    set(chart "")
  endif()
  set(dir ${PROJECT_SOURCE_DIR}/src/server/dashboard)
  set(out ${CMAKE_CURRENT_BINARY_DIR}/${target}_dashboard_assets.cpp)
  add_custom_command(
    OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -DOUT=${out} -DPAGE=${dir}/index.html -DSCRIPT=${dir}/dashboard.js
            -DCHART=${chart} -P ${PROJECT_SOURCE_DIR}/cmake/embed_assets.cmake
    DEPENDS ${dir}/index.html ${dir}/dashboard.js ${chart} ${PROJECT_SOURCE_DIR}/cmake/embed_assets.cmake
    COMMENT "Embedding the dashboard's files" VERBATIM)
  target_sources(${target} PRIVATE ${out})
endfunction()
